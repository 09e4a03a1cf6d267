package payment

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestEventTypesListsEveryEvent reads this package's source: every type with
// an EventType method must be in EventTypes, or the registries' tests, which
// iterate that list, would never hear of it.
func TestEventTypesListsEveryEvent(t *testing.T) {
	consts := map[string]string{}   // constant name → its string value
	returned := map[string]string{} // event type → the constant its EventType returns
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if lit, ok := valueAt(n.Values, i).(*ast.BasicLit); ok && lit.Kind == token.STRING {
						consts[name.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			case *ast.FuncDecl:
				if n.Recv == nil || n.Name.Name != "EventType" {
					return false
				}
				recv := receiverName(n.Recv.List[0].Type)
				returned[recv] = ""
				if len(n.Body.List) == 1 {
					if ret, ok := n.Body.List[0].(*ast.ReturnStmt); ok && len(ret.Results) == 1 {
						if id, ok := ret.Results[0].(*ast.Ident); ok {
							returned[recv] = id.Name
						}
					}
				}
				return false
			}
			return true
		})
	}
	if len(returned) == 0 {
		t.Fatal("found no EventType methods: the test no longer reads the package")
	}
	listed := EventTypes()
	for recv, c := range returned {
		name, ok := consts[c]
		if !ok {
			t.Errorf("%s.EventType must return one of the Type… string constants", recv)
			continue
		}
		if !slices.Contains(listed, name) {
			t.Errorf("event type %q (%s) is missing from EventTypes in domain/payment/events.go", name, recv)
		}
	}
	if len(listed) != len(returned) {
		t.Errorf("EventTypes lists %d types, the package has %d events", len(listed), len(returned))
	}
}

func valueAt(values []ast.Expr, i int) ast.Expr {
	if i < len(values) {
		return values[i]
	}
	return nil
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
