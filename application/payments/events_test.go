package payments_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/payments/paymentstest"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// TestEveryEventTypeHasAWireForm is the test that names the place a new event
// type was forgotten on the producer side.
func TestEveryEventTypeHasAWireForm(t *testing.T) {
	types := domainEventTypes(t)
	for typ, goType := range types {
		if _, ok := payments.DataVersion(typ); !ok {
			t.Errorf("event type %q (payment.%s) has no wire form: add it to the producer registry in application/payments/events.go", typ, goType)
		}
	}
	for _, typ := range payments.RegisteredEventTypes() {
		if _, ok := types[typ]; !ok {
			t.Errorf("the producer registry has a wire form for %q, which no event in domain/payment has as its EventType", typ)
		}
	}
}

// domainDir is the domain package whose events the payments service publishes.
const domainDir = "../../domain/payment"

// domainEventTypes reads the source of domain/payment and returns the type
// name of every event it declares — every type with an EventType method —
// mapped to the Go type's name. Reading the source, rather than a list the
// domain keeps, is what makes a new event one change in the domain: nothing
// else there has to remember it, and the tests here still cannot miss it.
// EventType must return a string constant of the package or a literal.
func domainEventTypes(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(domainDir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	consts := map[string]string{} // constant name → its string value
	var methods []*ast.FuncDecl
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i < len(vs.Values) {
							if v, ok := stringLit(vs.Values[i]); ok {
								consts[name.Name] = v
							}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && d.Name.Name == "EventType" {
					methods = append(methods, d)
				}
			}
		}
	}
	types := map[string]string{}
	for _, m := range methods {
		goType := receiverName(m.Recv.List[0].Type)
		typ, ok := "", false
		if len(m.Body.List) == 1 {
			if ret, isRet := m.Body.List[0].(*ast.ReturnStmt); isRet && len(ret.Results) == 1 {
				if typ, ok = stringLit(ret.Results[0]); !ok {
					if id, isID := ret.Results[0].(*ast.Ident); isID {
						typ, ok = consts[id.Name]
					}
				}
			}
		}
		if !ok {
			t.Errorf("%s: %s.EventType must return a string constant of the package, or a literal, for this test to read it", fset.Position(m.Pos()), goType)
			continue
		}
		if other, dup := types[typ]; dup {
			t.Errorf("%s and %s are both published as %q", other, goType, typ)
		}
		types[typ] = goType
	}
	if len(types) == 0 {
		t.Fatalf("found no EventType methods in %s: the test no longer reads the package", domainDir)
	}
	return types
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

func receiverName(e ast.Expr) string {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}

var update = flag.Bool("update", false, "write docs/events/*.json from the encoder instead of comparing")

// eventsDir holds one document per published event type and data version,
// exactly as published: the wire contract a consumer codes against.
const eventsDir = "../../docs/events"

// TestWireFormIsStable keeps every published event byte for byte: the
// encoder's output must equal the document in docs/events (compacted). A
// consumer parses these bytes; changing them is a breaking change to the
// event, which bumps its data version instead. An event recorded by a traced
// write is the same document with the two distributed-tracing attributes
// last, and nothing else changed.
func TestWireFormIsStable(t *testing.T) {
	all := paymentstest.Samples()
	for _, typ := range slices.Sorted(maps.Keys(domainEventTypes(t))) {
		t.Run(typ, func(t *testing.T) {
			s, ok := all[typ]
			if !ok {
				t.Fatalf("no sample of %q: add one to Samples in application/payments/paymentstest/samples.go", typ)
			}
			got, err := payments.EncodeEvent(s.MessageID, s.Event, payments.TraceContext{})
			if err != nil {
				t.Fatal(err)
			}
			version, _ := payments.DataVersion(typ)
			path := filepath.Join(eventsDir, typ+".v"+version+".json")
			if *update {
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, got, "", "  "); err != nil {
					t.Fatal(err)
				}
				pretty.WriteByte('\n')
				if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			golden, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v: write it with go test ./application/payments -run TestWireFormIsStable -update, and read it", err)
			}
			var want bytes.Buffer
			if err := json.Compact(&want, golden); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("%s is published as\n%s\nwant (%s)\n%s", typ, got, path, want.Bytes())
			}

			tc := payments.TraceContext{Parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", State: "vendor=opaque"}
			traced, err := payments.EncodeEvent(s.MessageID, s.Event, tc)
			if err != nil {
				t.Fatal(err)
			}
			wantTraced := append(bytes.TrimSuffix(want.Bytes(), []byte("}")),
				[]byte(`,"traceparent":"`+tc.Parent+`","tracestate":"`+tc.State+`"}`)...)
			if !bytes.Equal(traced, wantTraced) {
				t.Errorf("%s, traced, is published as\n%s\nwant\n%s", typ, traced, wantTraced)
			}
		})
	}
}

// notAnEvent is an event type the producer has no wire form for.
type notAnEvent struct{ payment.Created }

func (notAnEvent) EventType() string { return "payment.unheard_of" }

func TestEncodeEventRefusesAnEventWithoutWireForm(t *testing.T) {
	if doc, err := payments.EncodeEvent(uuid.NewString(), notAnEvent{}, payments.TraceContext{}); err == nil {
		t.Errorf("EncodeEvent(%T) = %s, want an error", notAnEvent{}, doc)
	}
}
