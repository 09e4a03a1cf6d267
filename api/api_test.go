package api_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
)

var documents = []struct {
	file string
	doc  []byte
	// code are the packages whose problem types the service answers.
	code []string
	// except are the types those packages answer on another listener or
	// service, never on this document's routes.
	except []string
}{
	{api.PaymentsFile, api.Payments(), []string{"../adapters/httpserver", "../adapters/paymentsapi"},
		[]string{"not-ready"}}, // the ops listener's
	{api.LedgerFile, api.Ledger(), []string{"../adapters/httpserver", "../adapters/ledgerapi"},
		// The ops listener's; payments rate-limits its keys, the ledger's
		// tokens are operators'; the ledger takes no request body, nor an
		// Idempotency-Key.
		[]string{"not-ready", "rate-limited", "malformed-body", "unsupported-media-type", "body-too-large",
			"invalid-idempotency-key", "idempotency-key-reused", "idempotency-key-in-flight"}},
	{api.WebhooksFile, api.Webhooks(), []string{"../adapters/httpserver", "../adapters/webhooksapi"},
		[]string{"not-ready"}}, // the ops listener's
	{api.OpsFile, api.Ops(), []string{"../adapters/httpserver"},
		// The APIs' answers: the ops routes need no credentials, reach no
		// store, take no body and list nothing.
		[]string{"authentication-required", "malformed-credentials", "invalid-credentials", "rate-limited", "unavailable", "client-closed-request",
			"malformed-body", "unsupported-media-type", "body-too-large", "invalid-query-parameter",
			"invalid-idempotency-key", "idempotency-key-reused", "idempotency-key-in-flight"}},
}

// TestDocumentsAreValid: each document loads, is a valid OpenAPI 3.1
// document, and says what the service answers off its routes.
func TestDocumentsAreValid(t *testing.T) {
	for _, d := range documents {
		t.Run(d.file, func(t *testing.T) {
			apitest.New(t, d.doc) // fails t unless it loads and validates
			if doc := load(t, d.doc); doc.OpenAPI != "3.1.0" {
				t.Errorf("openapi: %s, want 3.1.0", doc.OpenAPI)
			}
		})
	}
}

// TestServedDocumentMatchesItsSchema: the schema of GET /openapi.yaml's
// answer accepts the document each way a validator may read it: parsed, the
// object kin-openapi (api/apitest) decodes application/yaml into, and as
// text, the string a validating proxy that parses no YAML (Prism) checks.
func TestServedDocumentMatchesItsSchema(t *testing.T) {
	for _, d := range documents {
		doc := load(t, d.doc)
		item := doc.Paths.Value("/openapi.yaml")
		if item == nil {
			continue // the ops listener does not serve its document
		}
		t.Run(d.file, func(t *testing.T) {
			resp := item.Get.Responses.Status(200)
			media := resp.Value.Content.Get("application/yaml")
			if media == nil || media.Schema == nil {
				t.Fatal("GET /openapi.yaml: no application/yaml schema for 200")
			}
			b, err := json.Marshal(media.Schema.Value)
			if err != nil {
				t.Fatal(err)
			}
			sdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft2020) // OpenAPI 3.1's dialect
			if err := c.AddResource("mem:///openapi-yaml.json", sdoc); err != nil {
				t.Fatal(err)
			}
			schema, err := c.Compile("mem:///openapi-yaml.json")
			if err != nil {
				t.Fatal(err)
			}
			var parsed any
			if err := yaml.Unmarshal(d.doc, &parsed); err != nil {
				t.Fatal(err)
			}
			pb, err := json.Marshal(parsed)
			if err != nil {
				t.Fatal(err)
			}
			pdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(pb))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(pdoc); err != nil {
				t.Errorf("parsed, the document does not match its own schema: %v", err)
			}
			if err := schema.Validate(string(d.doc)); err != nil {
				t.Errorf("as text, the document does not match its own schema, so a validating proxy that reads the body as a string refuses the route: %v", err)
			}
		})
	}
}

// TestEveryProblemTypeIsDocumented: the problem types in a document's
// ProblemType are exactly those its service's code can answer, and the
// responses name only those. A new problem type in the code fails here until
// the document explains it.
func TestEveryProblemTypeIsDocumented(t *testing.T) {
	for _, d := range documents {
		t.Run(d.file, func(t *testing.T) {
			doc := load(t, d.doc)
			documented := problemTypes(t, doc)
			var answered []string
			for _, dir := range d.code {
				for _, slug := range slugsIn(t, dir) {
					if !slices.Contains(d.except, slug) {
						answered = append(answered, slug)
					}
				}
			}
			for _, slug := range answered {
				if !slices.Contains(documented, "/problems/"+slug) {
					t.Errorf("the code answers /problems/%s, which ProblemType does not list", slug)
				}
			}
			for _, typ := range documented {
				if !slices.Contains(answered, strings.TrimPrefix(typ, "/problems/")) {
					t.Errorf("ProblemType lists %s, which the code never answers", typ)
				}
			}

			named := map[string]bool{}
			for where, types := range responseTypes(doc) {
				for _, typ := range types {
					named[typ] = true
					if !slices.Contains(documented, typ) {
						t.Errorf("%s names %s, which ProblemType does not list", where, typ)
					}
				}
			}
			for _, typ := range documented {
				// No client receives a 499: its client has gone.
				if !named[typ] && typ != "/problems/client-closed-request" {
					t.Errorf("ProblemType lists %s, but no response carries it", typ)
				}
			}
		})
	}
}

// TestEveryKeyedOperationDocumentsTheKeysAnswers: an operation that takes
// an Idempotency-Key can be answered each of the key's problems
// (application/idempotency, answered by httpserver.WriteError alike on
// every API): the key's form refused (400), the key reused with another
// request (422), and a twin of a request still running (409, with
// Retry-After). A route given a key and not these answers would make a
// client that follows its document treat a retry's refusal as unknown.
func TestEveryKeyedOperationDocumentsTheKeysAnswers(t *testing.T) {
	want := []struct {
		status, typ string
		header      string
	}{
		{"400", "/problems/invalid-idempotency-key", ""},
		{"422", "/problems/idempotency-key-reused", ""},
		{"409", "/problems/idempotency-key-in-flight", "Retry-After"},
	}
	keyed := 0
	for _, d := range documents {
		doc := load(t, d.doc)
		for path, item := range doc.Paths.Map() {
			for method, op := range item.Operations() {
				takesKey := false
				for _, p := range append(item.Parameters, op.Parameters...) {
					takesKey = takesKey || p.Value != nil && p.Value.In == "header" && p.Value.Name == "Idempotency-Key"
				}
				if !takesKey {
					continue
				}
				keyed++
				for _, w := range want {
					res := op.Responses.Value(w.status)
					if res == nil || res.Value == nil {
						t.Errorf("%s: %s %s takes an Idempotency-Key and documents no %s (%s)", d.file, method, path, w.status, w.typ)
						continue
					}
					types := typesOf(res.Value)
					if !slices.Contains(types, w.typ) {
						t.Errorf("%s: %s %s takes an Idempotency-Key; its %s names %v, not %s", d.file, method, path, w.status, types, w.typ)
					}
					if w.header != "" && res.Value.Headers[w.header] == nil {
						t.Errorf("%s: %s %s takes an Idempotency-Key; its %s has no %s header", d.file, method, path, w.status, w.header)
					}
				}
			}
		}
	}
	if keyed < 6 {
		t.Fatalf("found %d operations that take an Idempotency-Key; the test is not looking where it should", keyed)
	}
}

func load(t *testing.T, b []byte) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// problemTypes returns the consts of the document's ProblemType.
func problemTypes(t *testing.T, doc *openapi3.T) []string {
	t.Helper()
	ref := doc.Components.Schemas["ProblemType"]
	if ref == nil {
		t.Fatal("no components.schemas.ProblemType")
	}
	var out []string
	for _, one := range ref.Value.OneOf {
		s, ok := one.Value.Const.(string)
		// The title names the constant a generated client gets.
		if !ok || one.Value.Title == "" || one.Value.Description == "" {
			t.Errorf("ProblemType: each oneOf must be a const with a title and a description of its meaning, got %+v", one.Value)
		}
		out = append(out, s)
	}
	return out
}

// responseTypes returns the problem types each problem+json response names,
// by where it is in the document.
func responseTypes(doc *openapi3.T) map[string][]string {
	out := map[string][]string{}
	add := func(where string, res *openapi3.ResponseRef) {
		if res == nil || res.Ref != "" || res.Value == nil {
			return // a $ref is visited as a component
		}
		if types := typesOf(res.Value); len(types) > 0 {
			out[where] = types
		}
	}
	for name, res := range doc.Components.Responses {
		add("components.responses."+name, res)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, res := range op.Responses.Map() {
				add(method+" "+path+" "+status, res)
			}
		}
	}
	return out
}

// typesOf returns the problem types a problem+json response names.
func typesOf(res *openapi3.Response) []string {
	mt := res.Content.Get("application/problem+json")
	if mt == nil || mt.Schema == nil {
		return nil
	}
	var out []string
	for _, part := range mt.Schema.Value.AllOf {
		typ := part.Value.Properties["type"]
		if typ == nil {
			continue
		}
		if s, ok := typ.Value.Const.(string); ok {
			out = append(out, s)
		}
		for _, e := range typ.Value.Enum {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// slugsIn returns the problem slugs the Go package in dir answers: the second
// argument of each NewProblem call (a refusal before the application, an
// httpserver.RequestError, holds one too).
func slugsIn(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var slugs []string
	str := func(e ast.Expr) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				slugs = append(slugs, s)
			}
		}
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if name(n.Fun) == "NewProblem" && len(n.Args) > 1 {
					str(n.Args[1])
				}
			}
			return true
		})
	}
	if len(slugs) == 0 {
		t.Fatalf("found no problem slug in %s: has the way it answers them changed?", dir)
	}
	sort.Strings(slugs)
	return slices.Compact(slugs)
}

func name(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}
