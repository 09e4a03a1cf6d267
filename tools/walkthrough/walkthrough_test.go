package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
	"github.com/payments-outbox/payments-outbox/tools/internal/proc"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	awstest.Terminate()
	os.Exit(code)
}

// TestReadmeWalkthrough starts the real binaries — payments, the ledger,
// the webhooks service and the demo webhook receiver — with the environment
// docker-compose.yml gives them — host names swapped for the test's Postgres
// and SNS/SQS endpoint, databases and queues of the test's own — runs the
// walkthrough, and checks that its output is, up to ids and timestamps, what
// the README shows. If this fails after an intended change, regenerate the
// README's walkthrough with `make demo`.
func TestReadmeWalkthrough(t *testing.T) { walkthrough(t, awstest.QueueConfig{}) }

// TestReadmeWalkthroughFIFO runs the walkthrough with the FIFO topic and
// queues localstack/init-aws.sh creates with PAYMENTS_FIFO=true: payments
// publishes in ordered mode (the default for a FIFO topic) and the ledger
// consumes the FIFO queue, with the same answers.
func TestReadmeWalkthroughFIFO(t *testing.T) { walkthrough(t, awstest.QueueConfig{FIFO: true}) }

func walkthrough(t *testing.T, queue awstest.QueueConfig) {
	if testing.Short() {
		t.Skip("starts the services")
	}
	svc := startServices(t, nil, queue)

	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The walkthrough's default credentials are the demo's: compose's
	// demo-key job stored the key, and the ledger got compose's token.
	args := []string{"-payments", "http://" + svc.payAddr, "-ledger", "http://" + svc.ledAddr, "-payments-ops", "http://" + svc.payOps,
		"-webhooks", "http://" + svc.whAddr, "-webhooks-ops", "http://" + svc.whOps,
		"-receiver-url", svc.receiverURL(), "-receiver-secret-file", svc.receiver.secretFile, "-receiver-logs", "cat " + svc.receiver.log,
		"-key", "order-1001"}
	if err := run(ctx, args, &out, svc.client); err != nil {
		t.Fatalf("walkthrough: %v\n%s", err, out.String())
	}
	got := strings.NewReplacer("http://"+svc.payAddr, "http://localhost:8080", "http://"+svc.ledAddr, "http://localhost:8081",
		"http://"+svc.payOps, "http://localhost:9090", "http://"+svc.whAddr, "http://localhost:8082",
		"http://"+svc.whOps, "http://localhost:9092", svc.receiverURL(), "http://webhook-receiver:8083/webhooks",
		"cat "+svc.receiver.log, "docker compose logs --no-log-prefix webhook-receiver").Replace(out.String())

	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<!-- walkthrough:start -->\n(.*)<!-- walkthrough:end -->`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no <!-- walkthrough:start --> … <!-- walkthrough:end --> section")
	}
	if normalize(got) != normalize(string(m[1])) {
		t.Errorf("the walkthrough's output differs from README.md (ids and timestamps aside).\ngot:\n%s\nREADME:\n%s", got, m[1])
	}

	// The GitHub workflow checks the balances one walkthrough leaves on the
	// new ledger of its compose stack: they are these.
	t.Run("the CI workflow's figures are what the walkthrough leaves", func(t *testing.T) {
		w := &walk{ledger: "http://" + svc.ledAddr, ledgerToken: demoLedgerToken, client: svc.client}
		want := ciFigures(t)
		for _, account := range []string{merchantAccount, payerAccount} {
			got, err := w.balance(ctx, account)
			if err != nil {
				t.Fatal(err)
			}
			if got != want[account] {
				t.Errorf("the walkthrough leaves %s at %d BRL; .github/workflows/ci.yml wants %d", account, got, want[account])
			}
		}
	})

	// The walkthrough has used every route and moved an event through the
	// outbox and the ledger, so each service now exposes every series it
	// ever will: the dashboard and the alert rules must read those.
	t.Run("dashboard and alert rules read what the services expose", func(t *testing.T) {
		// A delivery the receiver refuses, for the series of an
		// undelivered delivery.
		svc.failingDelivery(ctx, t)
		checkQueries(t, map[string]string{"payments": svc.payOps, "ledger": svc.ledOps, "webhooks": svc.whOps})
	})
}

// services are the binaries running as docker-compose.yml runs them, each
// on databases of the test's own and its own topic and queues.
type services struct {
	payAddr, payOps, ledAddr, ledOps, whAddr, whOps string
	paymentsDB, ledgerDB, webhooksDB                string // database URLs
	receiver                                        *receiver
	dir                                             string // the built binaries and their logs
	// client sends to any service and checks every exchange against
	// its OpenAPI document.
	client *http.Client
}

// startServices starts payments, the ledger, the webhooks service and the
// demo webhook receiver with the environment docker-compose.yml gives them —
// host names swapped for the test's Postgres and SNS/SQS endpoint, payments'
// URL for the test's payments, databases and queues of the test's own — after
// the one-shot jobs compose runs before payments (the schema, the demo's
// key). extraEnv overrides variables by service ("payments", "ledger",
// "webhooks").
func startServices(t *testing.T, extraEnv map[string]map[string]string, queue awstest.QueueConfig) *services {
	t.Helper()
	dbServer, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	endpoint := awstest.Endpoint(t)
	fixture := awstest.NewTopicQueue(t, queue)
	webhooksQueue := subscribeQueue(t, fixture)
	svc := &services{paymentsDB: pgtest.NewDatabase(t), ledgerDB: pgtest.NewDatabase(t), webhooksDB: pgtest.NewDatabase(t), dir: t.TempDir()}

	env, jobs := composeEnv(t)
	swapHosts := func(v string) string {
		v = strings.ReplaceAll(v, "postgres:postgres@postgres:5432", dbServer.User.String()+"@"+dbServer.Host)
		return strings.ReplaceAll(v, "http://localstack:4566", endpoint)
	}
	for _, e := range env {
		for k, v := range e {
			e[k] = swapHosts(v)
		}
	}
	env["payments"]["DATABASE_URL"] = svc.paymentsDB
	env["payments"]["PAYMENTS_TOPIC_ARN"] = fixture.TopicARN
	env["ledger"]["DATABASE_URL"] = svc.ledgerDB
	env["ledger"]["PAYMENTS_DATABASE_URL"] = svc.paymentsDB
	env["ledger"]["LEDGER_QUEUE_URL"] = fixture.QueueURL
	env["ledger"]["LEDGER_DLQ_URL"] = fixture.DLQURL
	for service, vars := range extraEnv {
		for k, v := range vars {
			env[service][k] = v
		}
	}
	env["webhooks"]["DATABASE_URL"] = svc.webhooksDB
	env["webhooks"]["WEBHOOKS_QUEUE_URL"] = webhooksQueue.url
	env["webhooks"]["WEBHOOKS_DLQ_URL"] = webhooksQueue.dlqURL

	// The one-shot jobs compose runs before payments (the schema, the demo's
	// key), with their command and environment as compose gives them.
	for _, job := range []string{"payments-migrate", "demo-key"} {
		runJob(t, svc.dir, jobs[job], svc.paymentsDB)
	}
	pay := start(t, svc.dir, "payments", env["payments"])
	svc.payAddr, svc.payOps = pay.Addr(), pay.OpsAddr()
	led := start(t, svc.dir, "ledger", env["ledger"])
	svc.ledAddr, svc.ledOps = led.Addr(), led.OpsAddr()
	// Compose's http://payments:8080 is the test's payments.
	if got := env["webhooks"]["WEBHOOKS_PAYMENTS_URL"]; got != "http://payments:8080" {
		t.Fatalf("compose's WEBHOOKS_PAYMENTS_URL is %q, not payments' API on the compose network", got)
	}
	env["webhooks"]["WEBHOOKS_PAYMENTS_URL"] = "http://" + svc.payAddr
	wh := start(t, svc.dir, "webhooks", env["webhooks"])
	svc.whAddr, svc.whOps = wh.Addr(), wh.OpsAddr()
	svc.receiver = startReceiver(t, svc.dir, jobs["webhook-receiver"])

	// Every exchange is checked against its service's OpenAPI document:
	// what the README shows is what the documents promise.
	toPayments := apitest.New(t, apidoc.Payments()).Transport(t, nil)
	toLedger := apitest.New(t, apidoc.Ledger()).Transport(t, nil)
	toWebhooks := apitest.New(t, apidoc.Webhooks()).Transport(t, nil)
	toOps := apitest.New(t, apidoc.Ops()).Transport(t, nil)
	svc.client = &http.Client{Timeout: 10 * time.Second, Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		switch r.URL.Host {
		case svc.payAddr:
			return toPayments.RoundTrip(r)
		case svc.ledAddr:
			return toLedger.RoundTrip(r)
		case svc.whAddr:
			return toWebhooks.RoundTrip(r)
		case svc.payOps, svc.whOps:
			return toOps.RoundTrip(r)
		}
		return nil, fmt.Errorf("the test called %s, none of the services", r.URL.Host)
	})}
	return svc
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var (
	uuidRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRe = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	// The webhooks service's ids (we_ and wa_ with a UUID's hex), the
	// endpoint's secret and an attempt's latency.
	hexIDRe   = regexp.MustCompile(`\b(we|wa)_[0-9a-f]{32}\b`)
	secretRe  = regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`)
	latencyRe = regexp.MustCompile(`"latency_ms":\d+`)
)

func normalize(s string) string {
	s = uuidRe.ReplaceAllString(s, "<uuid>")
	s = timeRe.ReplaceAllString(s, "<time>")
	s = hexIDRe.ReplaceAllString(s, "${1}_<id>")
	s = secretRe.ReplaceAllString(s, "whsec_<secret>")
	s = latencyRe.ReplaceAllString(s, `"latency_ms":<n>`)
	return strings.TrimSpace(s)
}

// composeEnv returns the environment docker-compose.yml gives each service,
// and its one-shot jobs.
func composeEnv(t *testing.T) (map[string]map[string]string, map[string]job) {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"../../docker-compose.yml"},
		cli.WithWorkingDirectory("../.."), cli.WithEnv([]string{}), cli.WithName("payments-outbox"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	envOf := func(name string) map[string]string {
		out := map[string]string{}
		for k, v := range p.Services[name].Environment {
			if v != nil {
				out[k] = *v
			}
		}
		return out
	}
	out := map[string]map[string]string{}
	for _, name := range []string{"payments", "ledger", "webhooks"} {
		out[name] = envOf(name)
	}
	jobs := map[string]job{}
	for _, name := range []string{"payments-migrate", "demo-key"} {
		s, ok := p.Services[name]
		if !ok || s.Build == nil || s.Build.Target != "payments" {
			t.Fatalf("docker-compose.yml has no job %s running the payments image", name)
		}
		jobs[name] = job{name: name, args: s.Command, env: envOf(name)}
	}
	// The demo receiver, a tool of this module, which the test builds and
	// runs itself (startReceiver).
	r, ok := p.Services["webhook-receiver"]
	if !ok || r.Build == nil || r.Build.Target != "webhook-receiver" {
		t.Fatal("docker-compose.yml has no service webhook-receiver running the webhook-receiver image")
	}
	jobs["webhook-receiver"] = job{name: "webhook-receiver", args: r.Command, env: envOf("webhook-receiver")}
	return out, jobs
}

// job is a service of the compose file that the test runs with its command
// and environment: a one-shot job of the payments binary, or the demo
// receiver.
type job struct {
	name string
	args []string
	env  map[string]string
}

// runJob runs j with the payments binary on the test's payments database,
// and requires it to succeed.
func runJob(t *testing.T, dir string, j job, dbURL string) {
	t.Helper()
	bin, err := proc.Build(t.Context(), dir, "payments")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, j.args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range j.env {
		if k == "DATABASE_URL" {
			v = dbURL
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compose job %s: %v\n%s", j.name, err, out)
	}
}

// TestDemoCredentialsAreComposes: the walkthrough's defaults, which `make
// demo` uses, are the key compose's demo-key job stores and the ledger's
// token.
func TestDemoCredentialsAreComposes(t *testing.T) {
	env, jobs := composeEnv(t)
	if args := jobs["demo-key"].args; !slices.Contains(args, demoAPIKey) {
		t.Errorf("demo-key stores %v, the walkthrough sends %s", args, demoAPIKey)
	}
	if got := env["ledger"]["LEDGER_API_TOKENS"]; got != demoLedgerToken {
		t.Errorf("compose's LEDGER_API_TOKENS = %q, the walkthrough sends %q", got, demoLedgerToken)
	}
}

// start builds cmd/<name>, runs it with env (and PATH and HOME only) on a
// free port, and waits until it is ready. At the end of the test it sends
// SIGTERM and requires a clean exit: graceful shutdown is part of what is
// tested.
func start(t *testing.T, dir, name string, env map[string]string) *proc.Process {
	t.Helper()
	bin, err := proc.Build(t.Context(), dir, name)
	if err != nil {
		t.Fatal(err)
	}
	vars := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	p, err := proc.New(name, bin, filepath.Join(dir, name+".log"), vars)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.Alive() {
			t.Errorf("%s exited before the end of the test", name)
		} else if err := p.Stop(); err != nil {
			t.Error(err) // how it ended instead of a clean exit
		}
		if t.Failed() {
			b, _ := os.ReadFile(p.Log())
			t.Logf("%s log:\n%s", name, b)
		}
	})
	return p
}
