package paymentsoutbox_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/internal/configdoc"
)

// TestConfigurationDocListsEveryVariable keeps docs/CONFIGURATION.md equal
// to what the services read. The variables are found in the source, not in a
// list kept by hand: every string literal (or string constant) that names an
// environment variable and is passed to a reader — os.Getenv, os.LookupEnv, a
// getenv function, a method of cmd/internal/envconfig's Reader, or a helper
// that takes a getenv function and a name — in the services' module, test
// files and test-support packages (…test) aside. A variable read under
// cmd/<service>/ must be in that service's table or in "Every service"; one
// read in shared code (cmd/internal, adapters) in any of them. A row that no
// code reads any more fails too: a deployment would set it for nothing.
func TestConfigurationDocListsEveryVariable(t *testing.T) {
	read, err := envReads(".")
	if err != nil {
		t.Fatal(err)
	}
	services := servicesOf(t)
	doc, err := os.ReadFile("docs/CONFIGURATION.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := configTables(string(doc), services)
	if len(read) < 10 || len(listed) < 10 {
		t.Fatalf("found %d variables in the code and %d in docs/CONFIGURATION.md; the test reads the wrong places", len(read), len(listed))
	}
	for _, name := range sortedKeys(read) {
		for _, at := range read[name] {
			in := listed[name]
			switch {
			case at.service == "" && len(in) == 0:
				t.Errorf("%s is read at %s but no table of docs/CONFIGURATION.md lists it: add a row (default, meaning)", name, at.pos)
			case at.service != "" && !in[at.service]:
				t.Errorf("%s is read by %s at %s but docs/CONFIGURATION.md lists it under neither %q nor \"Every service\": add a row (default, meaning)", name, at.service, at.pos, at.service)
			}
		}
	}
	for _, name := range sortedKeys(listed) {
		sites := read[name]
		if len(sites) == 0 {
			t.Errorf("docs/CONFIGURATION.md lists %s, which no code reads: remove its row, or read it", name)
			continue
		}
		for svc := range listed[name] {
			if !slices.ContainsFunc(sites, func(s envRead) bool { return s.service == "" || s.service == svc }) {
				t.Errorf("docs/CONFIGURATION.md lists %s for %s, which does not read it (read at %s)", name, svc, sites[0].pos)
			}
		}
	}
}

// TestEnvReadsFindsEveryReader holds the scanner to the shapes of read the
// services use, so that TestConfigurationDocListsEveryVariable cannot pass by
// finding nothing.
func TestEnvReadsFindsEveryReader(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, src string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cmd/internal/envconfig/envconfig.go", `package envconfig
type Reader struct{ getenv func(string) string }
func (r *Reader) Float(name string, def float64) float64 { return def }
func (r *Reader) String(name, def string) string { return r.getenv(name) }
`)
	write("cmd/svc/config.go", `package main
import "os"
const tokensVar = "SVC_TOKENS"
func load(getenv func(string) string, e interface{ Float(string, float64) float64; String(string, string) string }) {
	_ = e.Float("SVC_RATIO", 0.5)
	_ = e.String("SVC_NAME", "x")
	_ = getenv(tokensVar)
	_, _ = os.LookupEnv("SVC_LOOKED_UP")
	_ = envOr(getenv, "SVC_HELPER", "d")
	_ = e.String("lower-case is a flag, not a variable", "")
}
func envOr(getenv func(string) string, name, def string) string { return getenv(name) }
`)
	write("cmd/svc/config_test.go", `package main
import "os"
var _ = os.Getenv("IN_A_TEST")
`)
	write("adapters/thing/thing.go", `package thing
func Configured(getenv func(string) string) bool { return getenv("SHARED_VAR") != "" }
`)
	write("adapters/thingtest/thingtest.go", `package thingtest
import "os"
var _ = os.Getenv("TEST_SUPPORT_VAR")
`)
	got, err := envReads(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"SVC_RATIO": "svc", "SVC_NAME": "svc", "SVC_TOKENS": "svc", "SVC_LOOKED_UP": "svc", "SVC_HELPER": "svc", "SHARED_VAR": ""}
	for name, svc := range want {
		if len(got[name]) != 1 || got[name][0].service != svc {
			t.Errorf("%s: got %v, want one read by service %q", name, got[name], svc)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("found %s, which is no variable the services read (%v)", name, got[name])
		}
	}
}

// envRead is one place a variable is read: service is the directory under
// cmd/ it is read in, or "" for code any service may run.
type envRead struct {
	service string
	pos     string
}

var envName = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$`)

// envReads parses the non-test Go files of the module at root (tools/, a
// module of its own, aside) and returns where each environment variable is
// read.
func envReads(root string) (map[string][]envRead, error) {
	fset := token.NewFileSet()
	files := map[string][]*ast.File{} // by directory: a package's constants span its files
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || base == "testdata" || base == "tools" || strings.HasSuffix(base, "test")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files[dirOf(rel)] = append(files[dirOf(rel)], f)
		return nil
	})
	if err != nil {
		return nil, err
	}

	// The readers: the standard library's, any function named getenv (a
	// parameter, usually), every method of envconfig's Reader that takes a
	// name, and any helper that takes a getenv function beside a name.
	readers := map[string]bool{"Getenv": true, "LookupEnv": true, "getenv": true}
	for _, fs := range files {
		for _, f := range fs {
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok {
					continue
				}
				if f.Name.Name == "envconfig" && fd.Recv != nil && firstParamIsString(fd.Type) {
					readers[fd.Name.Name] = true
				}
				if takesGetenvAndName(fd.Type) {
					readers[fd.Name.Name] = true
				}
			}
		}
	}

	out := map[string][]envRead{}
	for dir, fs := range files {
		consts := stringConsts(fs)
		service := ""
		if rest, ok := strings.CutPrefix(dir, "cmd/"); ok {
			if svc, _, _ := strings.Cut(rest, "/"); svc != "internal" {
				service = svc
			}
		}
		for _, f := range fs {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || !readers[calleeName(call.Fun)] {
					return true
				}
				for _, arg := range call.Args {
					s, ok := stringValue(arg, consts)
					if !ok {
						continue
					}
					if envName.MatchString(s) {
						pos := fset.Position(arg.Pos())
						rel, _ := filepath.Rel(root, pos.Filename)
						out[s] = append(out[s], envRead{service: service, pos: filepath.ToSlash(rel) + ":" + strconv.Itoa(pos.Line)})
					}
					break // the name is the first string argument
				}
				return true
			})
		}
	}
	return out, nil
}

func dirOf(rel string) string { return filepath.ToSlash(filepath.Dir(rel)) }

func calleeName(fun ast.Expr) string {
	switch f := fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

func stringValue(e ast.Expr, consts map[string]string) (string, bool) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(v.Value)
		return s, err == nil
	case *ast.Ident:
		s, ok := consts[v.Name]
		return s, ok
	}
	return "", false
}

// stringConsts returns a package's constants that are string literals.
func stringConsts(files []*ast.File) map[string]string {
	out := map[string]string{}
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if s, ok := stringValue(vs.Values[i], nil); ok {
							out[name.Name] = s
						}
					}
				}
			}
		}
	}
	return out
}

func isString(e ast.Expr) bool { id, ok := e.(*ast.Ident); return ok && id.Name == "string" }

func firstParamIsString(ft *ast.FuncType) bool {
	return ft.Params != nil && len(ft.Params.List) > 0 && isString(ft.Params.List[0].Type)
}

// takesGetenvAndName reports whether a function has a func(string) string
// parameter and a string parameter: a helper that reads a variable by name.
func takesGetenvAndName(ft *ast.FuncType) bool {
	var getenv, name bool
	for _, p := range ft.Params.List {
		switch t := p.Type.(type) {
		case *ast.FuncType:
			if t.Params != nil && len(t.Params.List) == 1 && isString(t.Params.List[0].Type) && len(t.Params.List[0].Names) <= 1 &&
				t.Results != nil && len(t.Results.List) == 1 && isString(t.Results.List[0].Type) {
				getenv = true
			}
		default:
			if isString(t) {
				name = true
			}
		}
	}
	return getenv && name
}

// servicesOf returns the services: the directories under cmd/ but
// cmd/internal.
func servicesOf(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("cmd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "internal" {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		t.Fatal("no service under cmd/")
	}
	return out
}

// configTables returns, for every variable the service tables of the
// configuration document list, the services it is listed for. A table
// belongs to the "## " heading above it: a service's name, or one that says
// "every service". Other sections (what only the SDK or
// compose reads) are not the services' and are not checked. The parse is
// internal/configdoc's, which the Kubernetes manifests' policy test reads
// the document with too.
func configTables(doc string, services []string) map[string]map[string]bool {
	return configdoc.ServiceTables(doc, services)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestListenAddressesAreLoopbackAndDocumented: a service run from source
// listens on this machine's loopback unless told otherwise (a container or
// a pod says 0.0.0.0 in docker-compose.yml and deploy/kubernetes), and its
// defaults are the ones docs/CONFIGURATION.md gives per service. Every
// address literal (host:port) in a service's code must be one of them, so a
// healthcheck that asks another default than the listener's fails too.
func TestListenAddressesAreLoopbackAndDocumented(t *testing.T) {
	doc, err := os.ReadFile("docs/CONFIGURATION.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]map[string]string{} // service → variable → default
	perService := regexp.MustCompile("`([^`]+)` ([a-z]+)")
	for _, r := range configdoc.Rows(string(doc)) {
		if r.Name != "HTTP_ADDR" && r.Name != "OPS_ADDR" {
			continue
		}
		for _, m := range perService.FindAllStringSubmatch(r.Default, -1) {
			if documented[m[2]] == nil {
				documented[m[2]] = map[string]string{}
			}
			documented[m[2]][r.Name] = m[1]
		}
	}
	address := regexp.MustCompile(`^[0-9.]*:[0-9]+$`)
	for _, svc := range servicesOf(t) {
		want := documented[svc]
		if want["HTTP_ADDR"] == "" || want["OPS_ADDR"] == "" {
			t.Errorf("docs/CONFIGURATION.md gives %s no default HTTP_ADDR and OPS_ADDR (got %v)", svc, want)
			continue
		}
		for name, addr := range want {
			if !strings.HasPrefix(addr, "127.0.0.1:") {
				t.Errorf("%s's default %s is %s: a service run from source listens on loopback (127.0.0.1) unless told otherwise", svc, name, addr)
			}
		}
		found := map[string]bool{}
		fset := token.NewFileSet()
		err := filepath.WalkDir(filepath.Join("cmd", svc), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				s, ok := stringValue(asExpr(n), nil)
				if !ok || !address.MatchString(s) {
					return true
				}
				found[s] = true
				if s != want["HTTP_ADDR"] && s != want["OPS_ADDR"] {
					t.Errorf("%s: address %q is neither HTTP_ADDR's nor OPS_ADDR's default of docs/CONFIGURATION.md (%s, %s)", fset.Position(n.Pos()), s, want["HTTP_ADDR"], want["OPS_ADDR"])
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for name, addr := range want {
			if !found[addr] {
				t.Errorf("cmd/%s has no literal %q, the default %s docs/CONFIGURATION.md gives it", svc, addr, name)
			}
		}
	}
}

// asExpr is n as an expression, or nil.
func asExpr(n ast.Node) ast.Expr {
	e, _ := n.(ast.Expr)
	return e
}
