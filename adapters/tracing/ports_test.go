package tracing_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/ledgertracing"
	"github.com/payments-outbox/payments-outbox/adapters/paymentstracing"
	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/adapters/webhookstracing"
)

// traced is how each port the application declares is traced: by the
// decorators that wrap it (docs/ARCHITECTURE.md, "Tracing and metrics wrap
// ports"), or not, and why. A port added without an entry fails
// TestEveryPortIsTracedOrSaysWhyNot, so a new service's store cannot ship
// untraced by accident.
var traced = map[string]struct {
	by    []any  // the decorators; each takes the port and returns it
	repos []any  // the decorators of an inbox store whose repositories R are the port, which they wrap
	why   string // when by and repos are empty: why nothing wraps it
}{
	"payments.Repository": {by: []any{paymentstracing.Repository}},
	"outbox.Store":        {by: []any{tracing.Relay}},
	"partition.Store":     {by: []any{tracing.OrderedRelay}},
	"inbox.Recorder":      {by: []any{ledgertracing.Traced, webhookstracing.Inbox}},
	"inbox.Backlog":       {by: []any{ledgertracing.Traced, webhookstracing.Inbox}},
	"ledgers.Ledger":      {repos: []any{ledgertracing.Traced}},
	"webhooks.Fanout":     {repos: []any{webhookstracing.Inbox}},
	"webhooks.Endpoints":  {by: []any{webhookstracing.Endpoints}},
	"webhooks.Deliveries": {by: []any{webhookstracing.Deliveries}},
	"webhooks.Sender":     {by: []any{webhookstracing.Sender}},

	"outbox.Publisher":        {why: "called inside outbox.Store's Claim: tracing.Relay's publish span per row covers it"},
	"provenance.Broker":       {why: "the broker under the signing outbox.Publisher: covered by tracing.Relay's publish spans"},
	"ledgers.Reader":          {why: "reads behind the ledger API: the request's span and its statements (the pool's tracer) show them; reads pass through, as payments.Repository's Get"},
	"access.Store":            {why: "an API key's lookup at each request: its statements are children of the request's span (the pool's tracer)"},
	"inbox.Admin":             {why: "the operators' inbox commands, run outside any trace"},
	"ledgers.PaymentFacts":    {why: "`ledger reconcile`, a command run outside any trace"},
	"ledgers.LedgerFacts":     {why: "`ledger reconcile`, a command run outside any trace"},
	"outbox.StatsSource":      {why: "the gauges' poll: no trace to join, and a span per poll is noise"},
	"partition.BacklogSource": {why: "the gauges' poll: no trace to join, and a span per poll is noise"},
	"inbox.Schemas":           {why: "in memory: no I/O"},
	"inbox.Handler":           {why: "the consumer's own logic, implemented in the application: what it writes goes through its repositories R, which are traced"},
	"claimloop.Shares":        {why: "in memory: which claims a worker makes, no I/O"},
	"outbox.Metrics":          {why: "a metrics port: counting is not I/O to trace"},
	"partition.Metrics":       {why: "a metrics port: counting is not I/O to trace"},
	"inbox.ProcessorMetrics":  {why: "a metrics port: counting is not I/O to trace"},
	"inbox.UnhandledMetrics":  {why: "a metrics port: counting is not I/O to trace"},
	"ledgers.HandlerMetrics":  {why: "a metrics port: counting is not I/O to trace"},
	"webhooks.WorkerMetrics":  {why: "a metrics port: counting is not I/O to trace"},
}

// TestEveryPortIsTracedOrSaysWhyNot holds traced to the interfaces the
// application's packages declare (their test doubles' packages aside): each
// is in the table, each entry is a port that exists, and each decorator
// named takes and returns a value with every method of the port.
func TestEveryPortIsTracedOrSaysWhyNot(t *testing.T) {
	ports := applicationPorts(t)
	if len(ports) < 10 {
		t.Fatalf("found %d ports under application/; the test is not looking where it should", len(ports))
	}
	for name, methods := range ports {
		entry, ok := traced[name]
		switch {
		case !ok:
			t.Errorf("%s is a port nobody said how to trace: add a decorator beside its service (adapters/<service>tracing, wired in cmd), or an entry in traced saying why none", name)
		case len(entry.by) == 0 && len(entry.repos) == 0 && entry.why == "":
			t.Errorf("%s: neither a decorator nor why there is none", name)
		}
		for _, d := range entry.repos {
			// Record(ctx, msg, apply func(ctx, repos R) …): R is the port.
			fn := reflect.TypeOf(d)
			record, ok := fn.Out(0).MethodByName("Record")
			if !ok || record.Type.NumIn() != 3 || record.Type.In(2).Kind() != reflect.Func || record.Type.In(2).NumIn() != 2 {
				t.Errorf("%s: %v returns no inbox store", name, fn)
				continue
			}
			for _, m := range methods {
				if r := record.Type.In(2).In(1); !hasMethod(r, m) {
					t.Errorf("%s: decorator %v hands the handler %v, which has no method %s", name, fn, r, m)
				}
			}
		}
		for _, d := range entry.by {
			fn := reflect.TypeOf(d)
			if fn.Kind() != reflect.Func || fn.NumIn() == 0 || fn.NumOut() != 1 {
				t.Errorf("%s: decorator %v is not a func(port, …) port", name, fn)
				continue
			}
			for _, m := range methods {
				if _, ok := fn.In(0).MethodByName(m); !ok {
					t.Errorf("%s: decorator %v takes %v, which has no method %s", name, fn, fn.In(0), m)
				}
				if _, ok := fn.Out(0).MethodByName(m); !ok {
					t.Errorf("%s: decorator %v returns %v, which has no method %s", name, fn, fn.Out(0), m)
				}
			}
		}
	}
	for name := range traced {
		if _, ok := ports[name]; !ok {
			t.Errorf("traced lists %s, which the application no longer declares: remove the entry", name)
		}
	}
}

func hasMethod(t reflect.Type, name string) bool {
	_, ok := t.MethodByName(name)
	return ok
}

// applicationPorts returns the exported interfaces declared by the
// non-test files of the packages under application/ (the *test packages
// of doubles and contract suites aside), by package.Name, with the names
// of their methods (embedded interfaces' left out).
func applicationPorts(t *testing.T) map[string][]string {
	t.Helper()
	root := filepath.Join("..", "..", "application")
	ports := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.HasSuffix(filepath.Base(filepath.Dir(path)), "test") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				it, ok := ts.Type.(*ast.InterfaceType)
				if !ok || !ts.Name.IsExported() {
					continue
				}
				var methods []string
				for _, m := range it.Methods.List {
					for _, n := range m.Names {
						methods = append(methods, n.Name)
					}
				}
				slices.Sort(methods)
				ports[f.Name.Name+"."+ts.Name.Name] = methods
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// TestEveryDecoratorIsWired: a decorator in traced that no service's cmd
// calls traces nothing. Each must be called by the wiring (cmd/, test files
// aside), where it is applied when tracing is configured.
func TestEveryDecoratorIsWired(t *testing.T) {
	var wiring strings.Builder
	err := filepath.WalkDir(filepath.Join("..", "..", "cmd"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		wiring.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for port, entry := range traced {
		for _, d := range append(append([]any(nil), entry.by...), entry.repos...) {
			full := runtime.FuncForPC(reflect.ValueOf(d).Pointer()).Name() // …/adapters/webhookstracing.Inbox
			call := full[strings.LastIndex(full, "/")+1:] + "("
			if !strings.Contains(wiring.String(), call) {
				t.Errorf("%s: no service's cmd calls %s…): the decorator is never applied", port, call)
			}
		}
	}
}
