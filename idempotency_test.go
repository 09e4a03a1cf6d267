package paymentsoutbox_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestTheIdempotencyKeyIsDeclaredOnce keeps the Idempotency-Key's rules in
// application/idempotency (and its lock in adapters/postgres, LockKey): no
// other package declares a type, a bound, a lifetime or an error of the
// key. Two copies are how two APIs came to answer a twin in flight
// differently.
func TestTheIdempotencyKeyIsDeclaredOnce(t *testing.T) {
	owners := map[string]string{
		"application/idempotency": "the key's rules",
		"adapters/postgres":       "the key's lock",
	}
	names := regexp.MustCompile(`^(?i:maxKeyLen|keyTTL|keyRetention|IdempotencyKey)$|^Err(InvalidKey|KeyReused|KeyInFlight)$`)
	errText := regexp.MustCompile(`(?i)idempoten`)
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == "tools" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir // tools/ is a module of its own, talking to the APIs from outside
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if _, ok := owners[filepath.ToSlash(filepath.Dir(path))]; ok {
			return nil
		}
		files++
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for _, id := range n.Names {
					if names.MatchString(id.Name) {
						t.Errorf("%s declares %s: the Idempotency-Key's rules are application/idempotency's", path, id.Name)
					}
				}
			case *ast.TypeSpec:
				if names.MatchString(n.Name.Name) {
					t.Errorf("%s declares the type %s: the key is idempotency.Key", path, n.Name.Name)
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "New" && name(sel.X) == "errors" && len(n.Args) == 1 {
					if s := stringLit(n.Args[0]); errText.MatchString(s) {
						t.Errorf("%s declares the error %q: the key's errors are application/idempotency's", path, s)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d files; the test is not looking where it should", files)
	}
}

func stringLit(e ast.Expr) string {
	if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
		if s, err := strconv.Unquote(lit.Value); err == nil {
			return s
		}
	}
	return ""
}

func name(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
