package paymentsoutbox_test

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/payments-outbox/payments-outbox"

// TestInnerLayersImportOnlyWhatTheyMay keeps the dependency rule the README
// states (imports flow cmd → adapters → application → domain): the domain
// imports the standard library and itself; the application adds the domain,
// other application packages, two small general-purpose modules and the
// tests' log buffer (internal/logtest, standard library only). A driver,
// a broker SDK or a metrics client belongs in an adapter behind a port the
// application declares. Test files count too: a contract suite or a fake that
// needs an adapter's library is in the wrong layer.
func TestInnerLayersImportOnlyWhatTheyMay(t *testing.T) {
	allowed := map[string][]string{ // layer → import path prefixes it may use beyond the standard library
		module + "/domain/":      {module + "/domain/"},
		module + "/application/": {module + "/domain/", module + "/application/", module + "/internal/logtest/", "github.com/google/uuid/", "golang.org/x/sync/"},
	}
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports",
		module+"/domain/...", module+"/application/...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(out)
	packages := 0
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		packages++
		var may []string
		for layer, prefixes := range allowed {
			if strings.HasPrefix(p.ImportPath+"/", layer) {
				may = prefixes
			}
		}
		for _, imp := range append(append(p.Imports, p.TestImports...), p.XTestImports...) {
			if !standard(imp) && !hasAnyPrefix(imp, may) {
				t.Errorf("%s imports %s; only the standard library and %v are allowed there", p.ImportPath, imp, may)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	if packages < 6 {
		t.Fatalf("go list found %d packages under domain/ and application/; the test is not looking where it should", packages)
	}
}

// TestApplicationMakesNoHTTPCalls keeps the webhooks' HTTP calls where
// their guard is: the application decides what to send and what an answer
// means, through the webhooks.Sender port, and adapters/webhooksender,
// whose dialer refuses private addresses, makes the call. An http.Client
// built in a use case would dial a merchant's URL unguarded.
func TestApplicationMakesNoHTTPCalls(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}",
		module+"/application/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		seen++
		for _, imp := range fields[1:] {
			if imp == "net/http" {
				t.Errorf("%s imports net/http: the application sends through webhooks.Sender (adapters/webhooksender)", fields[0])
			}
		}
	}
	if seen < 3 {
		t.Fatalf("go list found %d packages; the test is not looking where it should", seen)
	}
}

// TestOutboxCoreKnowsNothingOfItsLayers keeps the relay a reader meets
// first the article's loop: application/outbox claims, publishes and marks
// through its Store port, and what a deployment adds — turns at the
// database (application/outbox/turns), ordered mode's partitions and leases
// (application/outbox/partition) — wraps that port from outside. The core
// and its test double import neither, directly or through another package,
// and declare nothing named after them (no Heartbeat, Release, Assignment,
// lease, partition or turn in a port).
func TestOutboxCoreKnowsNothingOfItsLayers(t *testing.T) {
	core := []string{module + "/application/outbox", module + "/application/outbox/outboxtest"}
	layers := []string{module + "/application/outbox/partition", module + "/application/outbox/turns"}
	out, err := exec.Command("go", append([]string{"list", "-deps", "-test", "-f", "{{.ImportPath}}"}, core...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, core[0]) {
		t.Fatalf("go list -deps %v listed %d packages without the core; the test is not looking where it should", core, len(deps))
	}
	for _, d := range deps {
		for _, l := range layers {
			if d == l || strings.HasPrefix(d, l+"/") {
				t.Errorf("the outbox core (%v) depends on %s; the layers wrap its Store port, never the other way", core, d)
			}
		}
	}

	words := regexp.MustCompile(`(?i:heartbeat|release|assignment|lease|partition)|^turns?|Turn`)
	files, err := filepath.Glob("application/outbox/*.go")
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		tree, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(tree, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				named++
				if words.MatchString(id.Name) {
					t.Errorf("%s: the outbox core names %s; leases, partitions and turns belong to the layers that wrap it", f, id.Name)
				}
			}
			return true
		})
	}
	if named < 100 {
		t.Fatalf("read %d names in application/outbox; the test is not looking where it should", named)
	}
}

// toolsOnly are modules the tools module (tools/go.mod) may need and the
// services' module must not reach: a fork builds, audits and upgrades every
// module its go.mod's graph holds, and these bring hundreds.
var toolsOnly = map[string]string{
	"github.com/prometheus/prometheus":   "the PromQL parser of tools/observability, and with it the SDKs of Kubernetes and of every cloud",
	"k8s.io/client-go":                   "Kubernetes' client, which Prometheus' service discovery brings",
	"github.com/compose-spec/compose-go": "the compose file loader of tools/stack and tools/walkthrough",
	"github.com/moby/moby":               "the Docker engine (its api and client modules are testcontainers-go's Docker client, and allowed)",
	"github.com/docker/docker":           "the Docker engine, under its old name",
}

// TestServicesModuleLeavesTheToolsDependencies fails when a module of
// toolsOnly, in any major version, joins the services' module graph: an
// import of it belongs in the tools module, beside the benchmark, the fault
// suite, the walkthrough and the compose tests.
func TestServicesModuleLeavesTheToolsDependencies(t *testing.T) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Path}}", "all")
	cmd.Env = append(os.Environ(), "GOWORK=off") // this module's go.mod, not a workspace's
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	modules := strings.Fields(string(out))
	if len(modules) < 2 || modules[0] != module {
		t.Fatalf("go list -m all listed %d modules, starting with %v; the test is not looking where it should", len(modules), modules[:min(1, len(modules))])
	}
	for _, m := range modules {
		for denied, why := range toolsOnly {
			if m == denied || strings.HasPrefix(m, denied+"/v") {
				t.Errorf("the services' go.mod reaches %s: %s. Import it from the tools module (tools/) instead; `go mod why -m %s` says who needs it", m, why, m)
			}
		}
	}
}

// standard reports whether path is in the standard library: the go command
// reserves import paths whose first element has no dot for it.
func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func hasAnyPrefix(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(path+"/", p) {
			return true
		}
	}
	return false
}
