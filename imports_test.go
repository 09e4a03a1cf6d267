package paymentsoutbox_test

import (
	"encoding/json"
	"errors"
	"fmt"
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

// TestNoStoreTraces keeps tracing out of the stores (docs/ARCHITECTURE.md,
// "Tracing and metrics wrap ports"): a store's SQL reads as SQL, its
// spans come from a decorator of its port (adapters/tracing and the
// services' own), and what it keeps of a trace (the inbox row's trace id,
// the outbox row's traceparent) reaches it as data. No package under
// adapters/postgres imports OpenTelemetry or the tracing adapters, test
// files included, except those in tracedStores, each with why.
func TestNoStoreTraces(t *testing.T) {
	tracedStores := map[string]string{
		"adapters/postgres": "the pool's driver hook, postgres.Config.TracerProvider (otelpgx): pgx's own tracer interface, " +
			"the decorator at the driver's boundary, set once when the pool opens; no store's code mentions it",
	}
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", module+"/adapters/postgres/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	stores := 0
	for {
		var p packageImports
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		stores++
		pkg := strings.TrimPrefix(p.ImportPath, module+"/")
		check := func(imports []string, test bool) {
			for _, imp := range imports {
				tracer := strings.HasPrefix(imp, "go.opentelemetry.io/") || strings.HasPrefix(imp, "github.com/exaring/otelpgx") ||
					strings.HasPrefix(imp+"/", module+"/adapters/tracing/") || strings.HasSuffix(imp, "tracing")
				if _, ok := tracedStores[pkg]; tracer && (test || !ok) {
					t.Errorf("%s imports %s: a store traces nothing itself. Trace its port with a decorator, and hand it what it keeps of a trace as data", p.ImportPath, imp)
				}
			}
		}
		check(p.Imports, false)
		check(append(append([]string(nil), p.TestImports...), p.XTestImports...), true)
	}
	if stores < 6 {
		t.Fatalf("go list found %d packages under adapters/postgres; the test is not looking where it should", stores)
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

// Who owns a package. A service's packages are named for it: a path element
// beginning with one of serviceNames' prefixes (domain/payment,
// application/payments, adapters/paymentsapi, adapters/postgres/ledgerstore,
// migrations/webhooks, cmd/ledger…). Every other package is listed in
// owners, with the packages below it, or the test says it does not know it.
const (
	shared = "shared"
	system = "the services together"
)

var serviceNames = []struct{ prefix, service string }{
	{"payment", "payments"},
	{"ledger", "ledger"},
	{"webhook", "webhooks"},
}

// owners are the packages (and the packages below them) no path element
// assigns to a service, and the ones whose name would mislead. Shared is
// what every service may import: the domain's money, the consuming and
// producing sides of the messaging (the inbox; the outbox, its relay, its
// store and SNS, which name no payment type), access (the API keys and
// tokens every API authenticates with), the stores' and the HTTP servers'
// plumbing, the metrics and tracing adapters, the API and event documents
// (api: the HTTP contracts and the events' wire contract, AsyncAPI and JSON
// Schemas), and the start-up every cmd shares.
var owners = map[string]string{
	"domain/money":                   shared,
	"application/access":             shared,
	"application/claimloop":          shared,
	"application/dependency":         shared,
	"application/idempotency":        shared,
	"application/inbox":              shared,
	"application/outbox":             shared,
	"application/provenance":         shared,
	"application/retention":          shared,
	"adapters/awstest":               shared,
	"adapters/eventschema":           shared,
	"adapters/httpserver":            shared,
	"adapters/internal":              shared,
	"adapters/metrics":               shared,
	"adapters/opsreport":             shared,
	"adapters/postgres":              shared,
	"adapters/sns":                   shared,
	"adapters/sqs":                   shared,
	"adapters/tracing":               shared,
	"api":                            shared,
	"cmd/internal":                   shared,
	"internal":                       shared,
	"observability":                  shared,
	"adapters/postgres/apikeystore":  "payments", // the API keys live in the payments database
	"adapters/apikeyclient":          "webhooks", // the webhooks API checks a key through the payments API
	"adapters/postgres/paymentmodel": system,     // a payment's life through the payments store, the relay and the ledger
	"":                               system,     // the repository's own tests: the docs, the error tables, the layers
}

// crossing is an import the rule allows: from one service into another's
// packages where it is a contract between the two. Each says why. (A
// shared package's code that needs a service, such as a decorator of its
// ports, moves beside that service instead: adapters/paymentstracing.)
type crossing struct {
	from, to string // packages (below the module)
	testOnly bool   // allowed from test files only
	why      string
}

var crossings = []crossing{
	{"adapters/postgres/ledgerstore", "migrations/payments", true,
		"reconcile reads the payments database's ledger_facts view, a contract the payments migrations define: the tests build that database"},
	{"adapters/postgres/ledgerstore", "domain/payment", true,
		"every payment status must have a reconcile rule: the test reads the statuses the payments domain declares"},
	{"cmd/ledger", "migrations/payments", true,
		"`ledger reconcile` reads the payments database's ledger_facts view: the command's test builds that database"},
	{"adapters/paymentsapi", "domain/ledger", true,
		"a payer or merchant id the payments API accepts must name a ledger account: the fuzz test asks the ledger's rule"},
	{"adapters/apikeyclient", "adapters/paymentsapi", true,
		"the webhooks API checks a merchant's key through the payments API: the client's test speaks to the real payments handler"},
	{"cmd/webhooks", "adapters/paymentsapi", true,
		"the webhooks service checks a merchant's key through the payments API: its test serves the real payments handler"},
}

// owner returns who owns pkg, a path below the module, and false if the
// table above does not say.
func owner(pkg string) (string, bool) {
	if o, ok := owners[pkg]; ok {
		return o, true
	}
	for _, elem := range strings.Split(pkg, "/") {
		for _, s := range serviceNames {
			if strings.HasPrefix(elem, s.prefix) {
				return s.service, true
			}
		}
	}
	for p := pkg; strings.Contains(p, "/"); {
		p = p[:strings.LastIndex(p, "/")]
		if o, ok := owners[p]; ok {
			return o, true
		}
	}
	return "", false
}

// packageImports is what go list says a package imports, its own and its
// test files' imports apart.
type packageImports struct {
	ImportPath                         string
	Imports, TestImports, XTestImports []string
}

// ownershipErrors returns what breaks the service-ownership rule in pkgs:
// a package the table does not know; a service's package, test files
// included, importing another service's; a shared package's own files
// importing a service's (its tests may use one as their example). A crossing
// allows one import; a crossing that allows none is stale and reported too.
func ownershipErrors(pkgs []packageImports) []string {
	var errs []string
	used := map[crossing]bool{}
	allowed := func(from, to string, test bool) bool {
		for _, c := range crossings {
			if c.from == from && c.to == to && (test || !c.testOnly) {
				used[c] = true
				return true
			}
		}
		return false
	}
	describe := func(pkg, o string) string {
		if o == shared || o == system {
			return fmt.Sprintf("%s (%s)", pkg, o)
		}
		return fmt.Sprintf("%s (the %s service's)", pkg, o)
	}
	for _, p := range pkgs {
		from := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		fromOwner, ok := owner(from)
		if !ok {
			errs = append(errs, fmt.Sprintf("imports_test.go does not know who owns %s: name it for its service (an element beginning payment, ledger or webhook) or list it in owners", p.ImportPath))
			continue
		}
		if fromOwner == system {
			continue
		}
		check := func(imports []string, test bool) {
			for _, imp := range imports {
				to, ok := strings.CutPrefix(imp, module+"/")
				if !ok {
					continue
				}
				toOwner, ok := owner(to)
				if !ok || toOwner == shared || toOwner == fromOwner || (fromOwner == shared && test) {
					continue // an unknown package is reported as itself
				}
				if allowed(from, to, test) {
					continue
				}
				if fromOwner == shared {
					errs = append(errs, fmt.Sprintf("%s imports %s: a package every service may use imports none of them. Move what needs %s beside it, into a package of that service", describe(from, fromOwner), describe(to, toOwner), to))
				} else {
					errs = append(errs, fmt.Sprintf("%s imports %s: a service imports its own packages and the shared ones only. Move what both need to a shared package (domain/money, api…), or, if it is a contract between the two, list it in crossings with why", describe(from, fromOwner), describe(to, toOwner)))
				}
			}
		}
		check(p.Imports, false)
		check(append(append([]string(nil), p.TestImports...), p.XTestImports...), true)
	}
	for _, c := range crossings {
		if !used[c] {
			errs = append(errs, fmt.Sprintf("crossings allows %s to import %s, and it no longer does (or it is not the crossing it says): remove the entry", c.from, c.to))
		}
	}
	return errs
}

// TestNoServiceImportsAnother keeps each service to its own packages and
// the shared ones (docs/ARCHITECTURE.md, "Services and what they share"),
// at every layer and in test files too: the payments service, the ledger
// and the webhooks service meet only through the shared packages and the
// contracts listed in crossings.
func TestNoServiceImportsAnother(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []packageImports
	counts := map[string]int{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p packageImports
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
		o, _ := owner(strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/"))
		counts[o]++
	}
	for _, o := range []string{"payments", "ledger", "webhooks", shared, system} {
		if counts[o] < 2 {
			t.Fatalf("go list found %d packages owned by %s (%v); the test is not looking where it should", counts[o], o, counts)
		}
	}
	for _, e := range ownershipErrors(pkgs) {
		t.Error(e)
	}
	for listed := range owners { // a package moved or gone leaves no stale entry
		found := false
		for _, p := range pkgs {
			rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
			found = found || rel == listed || strings.HasPrefix(rel, listed+"/")
		}
		if !found {
			t.Errorf("owners lists %q, and no package is there any more: remove the entry", listed)
		}
	}
}

// TestOwnershipRuleRefusesACrossing keeps the rule above able to fail: one
// service's application importing another's domain, a shared package
// importing a service, and a package nobody owns are each reported.
func TestOwnershipRuleRefusesACrossing(t *testing.T) {
	listed := make([]packageImports, 0, len(crossings))
	for _, c := range crossings { // every crossing used, so none is reported stale
		p := packageImports{ImportPath: module + "/" + c.from}
		if c.testOnly {
			p.TestImports = []string{module + "/" + c.to}
		} else {
			p.Imports = []string{module + "/" + c.to}
		}
		listed = append(listed, p)
	}
	for _, tt := range []struct {
		name string
		pkg  packageImports
		want string
	}{
		{"a service's application importing another's domain",
			packageImports{ImportPath: module + "/application/ledgers", Imports: []string{module + "/domain/payment"}},
			"application/ledgers (the ledger service's) imports domain/payment (the payments service's)"},
		{"a service's test importing another's store",
			packageImports{ImportPath: module + "/adapters/webhooksapi", XTestImports: []string{module + "/adapters/postgres/ledgerstore"}},
			"adapters/webhooksapi (the webhooks service's) imports adapters/postgres/ledgerstore (the ledger service's)"},
		{"a shared package importing a service",
			packageImports{ImportPath: module + "/adapters/metrics", Imports: []string{module + "/application/webhooks"}},
			"adapters/metrics (shared) imports application/webhooks (the webhooks service's)"},
		{"a package nobody owns",
			packageImports{ImportPath: module + "/adapters/kafka"},
			"does not know who owns " + module + "/adapters/kafka"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			errs := ownershipErrors(append(listed, tt.pkg))
			if len(errs) != 1 || !strings.Contains(errs[0], tt.want) {
				t.Errorf("got %q, want one error containing %q", errs, tt.want)
			}
		})
	}
}
