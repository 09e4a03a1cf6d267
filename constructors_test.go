package paymentsoutbox_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestConstructorsFollowOneConvention holds the services' constructors to
// docs/ARCHITECTURE.md, "Constructors": ports and required values, then the
// logger, the metrics, the clock, and a Config last. Read from the source of
// adapters/, application/ and cmd/internal/ (test files aside, test helpers
// included), it fails on:
//
//   - a New… function whose parameter after the logger, metrics or clock is
//     none of them, a source of ids or the Config (a positional setting);
//     whose logger comes after its metrics or clock; or whose Config is not
//     its last parameter;
//   - functional options: a variadic parameter of a func or …Option type;
//   - a …Config struct holding a logger, metrics or a clock, which are
//     positional.
func TestConstructorsFollowOneConvention(t *testing.T) {
	fset := token.NewFileSet()
	constructors := 0
	for _, root := range []string{"adapters", "application", "cmd/internal"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.FuncDecl:
					if d.Recv != nil || !d.Name.IsExported() || !strings.HasPrefix(d.Name.Name, "New") {
						continue
					}
					constructors++
					for _, e := range constructorErrors(d.Type.Params.List) {
						t.Errorf("%s: %s: %s", fset.Position(d.Pos()), d.Name.Name, e)
					}
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						ts, ok := spec.(*ast.TypeSpec)
						if !ok || !strings.HasSuffix(ts.Name.Name, "Config") {
							continue
						}
						st, ok := ts.Type.(*ast.StructType)
						if !ok {
							continue
						}
						for _, field := range st.Fields.List {
							if k := kind(field.Type); k == "logger" || k == "metrics" || k == "clock" {
								t.Errorf("%s: %s holds the %s; pass it positionally to the constructor", fset.Position(field.Pos()), ts.Name.Name, k)
							}
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if constructors < 30 {
		t.Fatalf("found %d constructors; the test reads the wrong places", constructors)
	}
}

// constructorErrors returns how params break the convention.
func constructorErrors(params []*ast.Field) []string {
	var kinds []string
	for _, p := range params {
		n := max(len(p.Names), 1)
		for range n {
			kinds = append(kinds, kind(p.Type))
		}
	}
	var errs []string
	rank := map[string]int{"logger": 1, "metrics": 2, "clock": 3, "config": 4}
	last := 0
	for i, k := range kinds {
		switch k {
		case "options":
			errs = append(errs, "functional options; take a Config, whose zero value means the defaults")
		case "config":
			if i != len(kinds)-1 {
				errs = append(errs, "the Config is not the last parameter")
			}
		}
		if r, ok := rank[k]; ok {
			if r < last {
				errs = append(errs, "the "+k+" comes after what the convention puts after it (logger, metrics, clock, Config)")
			}
			last = r
		}
		if last > 0 && rank[k] == 0 && k != "clock" {
			errs = append(errs, "a positional parameter after the logger, metrics or clock: a setting belongs in the Config, a port before them")
		}
	}
	return errs
}

// kind classifies a parameter or field type for the convention: logger,
// metrics, clock (a func() time.Time or func() string source), config,
// options, or "" for anything else.
func kind(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ellipsis:
		switch el := t.Elt.(type) {
		case *ast.FuncType:
			return "options"
		default:
			if strings.HasSuffix(typeName(el), "Option") {
				return "options"
			}
		}
		return ""
	case *ast.FuncType:
		if (t.Params == nil || len(t.Params.List) == 0) && t.Results != nil && len(t.Results.List) == 1 {
			if r := typeName(t.Results.List[0].Type); r == "time.Time" || r == "string" {
				return "clock"
			}
		}
		return ""
	}
	name := typeName(e)
	switch {
	case name == "slog.Logger":
		return "logger"
	case strings.HasSuffix(name, "Metrics"):
		return "metrics"
	case strings.HasSuffix(name, "Config") && name != "aws.Config":
		return "config"
	}
	return ""
}

// typeName is e's type name, pointer removed, qualified when e is.
func typeName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return typeName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr:
		return typeName(t.X) + "." + t.Sel.Name
	case *ast.IndexExpr:
		return typeName(t.X)
	}
	return ""
}

// TestConstructorRuleRefusesTheOtherShapes: the shapes the convention
// replaced fail the rule, so that it cannot pass by recognising nothing.
func TestConstructorRuleRefusesTheOtherShapes(t *testing.T) {
	for src, bad := range map[string]bool{
		"func NewRelay(store Store, pub Publisher, log *slog.Logger, metrics Metrics, now func() time.Time, cfg Config)": false,
		"func NewService(repo Repository, now func() time.Time, newID func() string, cfg Config)":                        false,
		"func NewAuthenticator(store Store, now func() time.Time, ttl time.Duration)":                                    true,
		"func NewTopicQueue(t testing.TB, opts ...Option)":                                                               true,
		"func NewThing(t testing.TB, opts ...func(*options))":                                                            true,
		"func NewHandler(svc Service, cfg Config, log *slog.Logger)":                                                     true,
		"func NewWorker(store Deliveries, now func() time.Time, log *slog.Logger, cfg WorkerConfig)":                     true,
		"func NewPublisher(client *Client, topicARN string, log *slog.Logger, inFlight int)":                             true,
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+src+" {}", 0)
		if err != nil {
			t.Fatal(err)
		}
		errs := constructorErrors(f.Decls[0].(*ast.FuncDecl).Type.Params.List)
		if (len(errs) > 0) != bad {
			t.Errorf("%s: errors %v, want bad=%v", src, errs, bad)
		}
	}
}
