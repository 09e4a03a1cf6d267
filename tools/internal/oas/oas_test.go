package oas

import (
	"slices"
	"strings"
	"testing"
)

func TestOperations(t *testing.T) {
	doc := `
openapi: 3.1.0
paths:
  /things/{id}:
    parameters:
      - name: id
        in: path
    summary: not an operation
    get:
      operationId: getThing
    delete:
      operationId: deleteThing
  /things:
    post:
      operationId: createThing
`
	got, err := Operations([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []Operation{{"createThing", "POST", "/things"}, {"deleteThing", "DELETE", "/things/{id}"}, {"getThing", "GET", "/things/{id}"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}

	if _, err := Operations([]byte("paths:\n  /x:\n    get:\n      summary: no id\n")); err == nil || !strings.Contains(err.Error(), "GET /x has no operationId") {
		t.Errorf("an operation without operationId: got %v", err)
	}
	if _, err := Operations([]byte("openapi: 3.1.0\n")); err == nil {
		t.Error("a document without operations: no error")
	}
}
