package paymentsoutbox_test

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/internal/configdoc"
)

// TestConfigurationDefaultsAreTheCodes holds every default docs/CONFIGURATION.md
// gives to the default the code passes when the variable is unset: the
// constant argument of each envconfig read in cmd (docs/ARCHITECTURE.md,
// "Constructors": a default is stated once, as a constant of the package
// whose withDefaults applies it, or in cmd when only the deployment has
// one). The reads are found by type-checking cmd's packages, so a default
// named by a constant (outbox.DefaultBatchSize) is compared by its value.
func TestConfigurationDefaultsAreTheCodes(t *testing.T) {
	code := envDefaults(t) // service ("" for shared code) → variable → value
	doc, err := os.ReadFile("docs/CONFIGURATION.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, row := range configdoc.Rows(string(doc)) {
		want, ok := row.DefaultValue()
		if !ok || row.Name == "HTTP_ADDR" || row.Name == "OPS_ADDR" {
			continue // the addresses differ by service: TestListenAddressesAreLoopbackAndDocumented
		}
		for _, svc := range servicesOf(t) {
			if !row.ForService(svc) {
				continue
			}
			for _, where := range []string{svc, ""} {
				got, ok := code[where][row.Name]
				if !ok || got.Kind() == constant.String && constant.StringVal(got) == "" {
					continue // "" is unset: the code decides at run time (OUTBOX_ORDERING from the topic)
				}
				checked++
				if !sameDefault(got, want) {
					t.Errorf("docs/CONFIGURATION.md gives %s the default %q; %s passes %s", row.Name, want, "cmd/"+or(where, "internal"), got)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("compared %d defaults; the test reads the wrong places", checked)
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sameDefault reports whether the constant got the code passes is the value
// the document writes as want.
func sameDefault(got constant.Value, want string) bool {
	switch got.Kind() {
	case constant.String:
		return constant.StringVal(got) == want
	case constant.Bool:
		b, err := strconv.ParseBool(want)
		return err == nil && b == constant.BoolVal(got)
	case constant.Int:
		n, ok := constant.Int64Val(got)
		if i, err := strconv.ParseInt(want, 10, 64); err == nil {
			return ok && i == n
		}
		var level slog.Level // LOG_LEVEL's names
		if err := level.UnmarshalText([]byte(want)); err == nil {
			return ok && int64(level) == n
		}
		d, err := time.ParseDuration(want)
		return err == nil && ok && int64(d) == n
	}
	return false
}

// envDefaults returns the constant defaults cmd's packages pass to the
// envconfig reads, by service (cmd/<service>/…) or "" (cmd/internal/…).
func envDefaults(t *testing.T) map[string]map[string]constant.Value {
	t.Helper()
	out, err := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export,Dir,GoFiles,Standard", "./cmd/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	type pkg struct {
		ImportPath, Export, Dir string
		GoFiles                 []string
		Standard                bool
	}
	exports := map[string]string{}
	var cmds []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if strings.HasPrefix(p.ImportPath, module+"/cmd/") {
			cmds = append(cmds, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, errors.New("no export data for " + path)
		}
		return os.Open(exports[path])
	})
	defaults := map[string]map[string]constant.Value{}
	for _, p := range cmds {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		if _, err := (&types.Config{Importer: imp}).Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", p.ImportPath, err)
		}
		svc := ""
		if rest, ok := strings.CutPrefix(p.ImportPath, module+"/cmd/"); ok && !strings.HasPrefix(rest, "internal/") {
			svc, _, _ = strings.Cut(rest, "/")
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) < 2 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				s := info.Selections[sel]
				if s == nil || !strings.HasSuffix(s.Recv().String(), module+"/cmd/internal/envconfig.Reader") {
					return true
				}
				name, def := info.Types[call.Args[0]].Value, info.Types[call.Args[1]].Value
				if name == nil || def == nil || name.Kind() != constant.String {
					return true // a default computed at run time (a service's own address) is not compared
				}
				if defaults[svc] == nil {
					defaults[svc] = map[string]constant.Value{}
				}
				defaults[svc][constant.StringVal(name)] = def
				return true
			})
		}
	}
	return defaults
}
