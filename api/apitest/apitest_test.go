package apitest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"
)

// thingsDoc documents a tiny API: POST /things, GET /things/{id}, and what
// the service answers off the document.
const thingsDoc = `
openapi: 3.1.0
info: {title: things, version: "1"}
paths:
  /things:
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              required: [name]
              properties:
                name: {type: string, minLength: 1}
      responses:
        '201':
          description: Created.
          headers:
            Location: {required: true, schema: {type: string}}
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Thing'}
        '400':
          description: Refused.
          content:
            application/problem+json:
              schema: {$ref: '#/components/schemas/Problem'}
  /things/{id}:
    get:
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        '200':
          description: The thing.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Thing'}
components:
  schemas:
    Thing:
      type: object
      additionalProperties: false
      required: [id, name]
      properties:
        id: {type: string}
        name: {type: string}
    Problem:
      type: object
      additionalProperties: false
      required: [type, status]
      properties:
        type: {type: string}
        status: {type: integer}
  responses:
    RouteNotFound:
      description: No such route.
      content:
        application/problem+json:
          schema:
            allOf:
              - $ref: '#/components/schemas/Problem'
              - properties: {type: {const: /problems/not-found}}
    MethodNotAllowed:
      description: Not with this method.
      content:
        application/problem+json:
          schema:
            allOf:
              - $ref: '#/components/schemas/Problem'
              - properties: {type: {const: /problems/method-not-allowed}}
    TransferEncodingRefused:
      description: A body framed by Transfer-Encoding.
      content:
        application/problem+json:
          schema:
            allOf:
              - $ref: '#/components/schemas/Problem'
              - properties: {type: {const: /problems/transfer-encoding-refused}}
`

// things is a fake service that follows thingsDoc except where a path asks
// it not to.
func things(w http.ResponseWriter, r *http.Request) {
	problem := func(status int, typ string) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":%q,"status":%d}`, typ, status)
	}
	thing := func(body string) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
	switch {
	case len(r.TransferEncoding) > 0 && r.URL.Path != "/things/chunked-accepted":
		problem(http.StatusBadRequest, "/problems/transfer-encoding-refused")
	case r.URL.Path == "/things" && r.Method == http.MethodPost:
		// Accepts any body, even one the document refuses.
		w.Header().Set("Location", "/things/1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"1","name":"a"}`)
	case r.URL.Path == "/things":
		problem(http.StatusMethodNotAllowed, "/problems/method-not-allowed")
	case r.URL.Path == "/things/extra-field":
		thing(`{"id":"2","name":"b","color":"red"}`)
	case r.URL.Path == "/things/missing-field":
		thing(`{"id":"3"}`)
	case r.URL.Path == "/things/teapot":
		w.WriteHeader(http.StatusTeapot)
	case r.URL.Path == "/things/extra-header":
		w.Header().Set("X-Debug", "1")
		thing(`{"id":"4","name":"d"}`)
	case r.URL.Path == "/things/chunked-accepted":
		thing(`{"id":"5","name":"e"}`)
	case r.URL.Path == "/wrong-problem":
		problem(http.StatusNotFound, "/problems/thing-not-found")
	case strings.HasPrefix(r.URL.Path, "/things/"):
		thing(`{"id":"1","name":"a"}`)
	case r.URL.Path == "/secret":
		thing(`{}`)
	default:
		problem(http.StatusNotFound, "/problems/not-found")
	}
}

var exchanges = []struct {
	name, method, path, body string
	want                     string // a word of the failure; "" when the exchange follows the document
	chunked                  bool   // the body is sent with Transfer-Encoding: chunked
}{
	{"documented read", "GET", "/things/1", "", "", false},
	{"documented write", "POST", "/things", `{"name":"a"}`, "", false},
	{"unlisted path, answered 404 as documented", "GET", "/nope", "", "", false},
	{"unlisted method, answered 405 as documented", "DELETE", "/things", "", "", false},
	{"undocumented field", "GET", "/things/extra-field", "", `"color"`, false},
	{"missing required field", "GET", "/things/missing-field", "", `"name"`, false},
	{"undocumented status", "GET", "/things/teapot", "", "418", false},
	{"undocumented route", "GET", "/secret", "", "undocumented route", false},
	{"undocumented header", "GET", "/things/extra-header", "", "X-Debug", false},
	{"an unlisted path answered off its documented shape", "GET", "/wrong-problem", "", "/problems/not-found", false},
	{"a refused request accepted", "POST", "/things", `{"name":""}`, "refuses the request", false},
	{"an unknown request field accepted", "POST", "/things", `{"name":"a","size":1}`, "refuses the request", false},
	{"a HEAD, checked as its path's GET", "HEAD", "/things/1", "", "", false},
	{"a HEAD of a path without GET, answered 405", "HEAD", "/things", "", "", false},
	{"a HEAD of an unlisted path, answered 404", "HEAD", "/nope", "", "", false},
	{"a HEAD with a status its GET does not have", "HEAD", "/things/teapot", "", "418", false},
	{"a HEAD with a header its GET does not have", "HEAD", "/things/extra-header", "", "X-Debug", false},
	{"a chunked body, refused as documented", "POST", "/things", `{"name":"a"}`, "", true},
	{"a chunked body on a read, refused as documented", "GET", "/things/1", `{}`, "", true},
	{"a chunked body accepted", "GET", "/things/chunked-accepted", `{}`, "TransferEncodingRefused", true},
}

// recorder is a testing.TB that records what a helper reports instead of
// failing the test that uses it.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Error(args ...any) { r.add(fmt.Sprint(args...)) }

func (r *recorder) Errorf(format string, args ...any) { r.add(fmt.Sprintf(format, args...)) }

func (r *recorder) Helper() {}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, s)
}

func (r *recorder) failures() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errs, "\n")
}

// checkReports fails t unless rec reported a failure containing want, or
// nothing when want is "".
func checkReports(t *testing.T, rec *recorder, want string) {
	t.Helper()
	got := rec.failures()
	switch {
	case want == "" && got != "":
		t.Errorf("reported %s, want nothing", got)
	case want != "" && !strings.Contains(got, want):
		t.Errorf("reported %q, want a failure naming %s", got, want)
	}
}

func TestHandlerBites(t *testing.T) {
	v := New(t, []byte(thingsDoc))
	for _, ex := range exchanges {
		t.Run(ex.name, func(t *testing.T) {
			rec := &recorder{}
			newRequest := func() *http.Request {
				req := httptest.NewRequest(ex.method, ex.path, strings.NewReader(ex.body))
				if ex.chunked {
					req.TransferEncoding, req.ContentLength = []string{"chunked"}, -1 // as net/http reads it
				}
				return req
			}
			req := newRequest()
			if ex.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			w := httptest.NewRecorder()
			v.Handler(rec, http.HandlerFunc(things)).ServeHTTP(w, req)
			checkReports(t, rec, ex.want)
			// The client still gets exactly what the service answered.
			direct := httptest.NewRecorder()
			things(direct, newRequest())
			if w.Code != direct.Code || w.Body.String() != direct.Body.String() {
				t.Errorf("the wrapped handler answered %d %s, the service %d %s", w.Code, w.Body, direct.Code, direct.Body)
			}
		})
	}
}

func TestTransportBites(t *testing.T) {
	v := New(t, []byte(thingsDoc))
	srv := httptest.NewServer(http.HandlerFunc(things))
	t.Cleanup(srv.Close)
	for _, ex := range exchanges {
		t.Run(ex.name, func(t *testing.T) {
			rec := &recorder{}
			client := &http.Client{Transport: v.Transport(rec, srv.Client().Transport)}
			req, err := http.NewRequest(ex.method, srv.URL+ex.path, strings.NewReader(ex.body))
			if err != nil {
				t.Fatal(err)
			}
			if ex.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			if ex.chunked {
				req.TransferEncoding = []string{"chunked"}
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil || len(body) == 0 && res.StatusCode != http.StatusTeapot && ex.method != http.MethodHead {
				t.Errorf("the client read %q (%v): the transport must hand the body on", body, err)
			}
			checkReports(t, rec, ex.want)
		})
	}
}

func TestCheckRoutes(t *testing.T) {
	v := New(t, []byte(thingsDoc))
	noop := func(http.ResponseWriter, *http.Request) {}
	tests := []struct {
		name   string
		routes func(chi.Router)
		want   []string
	}{
		{"the same routes", func(r chi.Router) { r.Post("/things", noop); r.Get("/things/{id}", noop) }, nil},
		{"an undocumented route", func(r chi.Router) {
			r.Post("/things", noop)
			r.Get("/things/{id}", noop)
			r.Delete("/things/{id}", noop)
		}, []string{"DELETE /things/{id} is served but not in the OpenAPI document"}},
		{"a documented route not served", func(r chi.Router) { r.Get("/things/{id}", noop) },
			[]string{"POST /things is in the OpenAPI document but not served"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := chi.NewRouter()
			tt.routes(r)
			rec := &recorder{}
			v.CheckRoutes(rec, r)
			if got, want := rec.failures(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("reported %q, want %q", got, want)
			}
		})
	}
}

func TestLoadRefusesADocumentWithoutOffRouteAnswers(t *testing.T) {
	for _, name := range []string{"RouteNotFound", "MethodNotAllowed", "TransferEncodingRefused"} {
		doc := strings.Replace(thingsDoc, "    "+name+":", "    Other:", 1)
		if _, err := load([]byte(doc)); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("got %v, want an error naming components.responses.%s", err, name)
		}
	}
	if _, err := load([]byte(strings.Replace(thingsDoc, "openapi: 3.1.0", "openapi: 3.1.0\nwebhooks: 3", 1))); err == nil {
		t.Error("an invalid document loaded")
	}
}
