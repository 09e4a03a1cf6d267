package main

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	awstest.Terminate()
	os.Exit(code)
}

// TestReadmeWalkthrough starts the two real binaries with the environment
// docker-compose.yml gives them — host names swapped for the test's Postgres
// and SNS/SQS endpoint, databases and queues of the test's own — runs the
// walkthrough, and checks that its output is, up to ids and timestamps, what
// the README shows. If this fails after an intended change, regenerate the
// README's walkthrough with `make demo`.
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("starts both services")
	}
	dbServer, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	endpoint := awstest.Endpoint(t)
	fixture := awstest.NewTopicQueue(t)
	paymentsDB, ledgerDB := pgtest.NewDatabase(t), pgtest.NewDatabase(t)

	env := composeEnv(t)
	swapHosts := func(v string) string {
		v = strings.ReplaceAll(v, "postgres:postgres@postgres:5432", dbServer.User.String()+"@"+dbServer.Host)
		return strings.ReplaceAll(v, "http://localstack:4566", endpoint)
	}
	for _, svc := range env {
		for k, v := range svc {
			svc[k] = swapHosts(v)
		}
	}
	payAddr, ledAddr := freeAddr(t), freeAddr(t)
	env["payments"]["DATABASE_URL"] = paymentsDB
	env["payments"]["HTTP_ADDR"] = payAddr
	env["payments"]["PAYMENTS_TOPIC_ARN"] = fixture.TopicARN
	env["ledger"]["DATABASE_URL"] = ledgerDB
	env["ledger"]["PAYMENTS_DATABASE_URL"] = paymentsDB
	env["ledger"]["HTTP_ADDR"] = ledAddr
	env["ledger"]["LEDGER_QUEUE_URL"] = fixture.QueueURL
	env["ledger"]["LEDGER_DLQ_URL"] = fixture.DLQURL

	bin := t.TempDir()
	start(t, bin, "payments", env["payments"])
	start(t, bin, "ledger", env["ledger"])
	waitReady(t, "http://"+payAddr)
	waitReady(t, "http://"+ledAddr)

	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, []string{"-payments", "http://" + payAddr, "-ledger", "http://" + ledAddr, "-key", "order-1001"}, &out); err != nil {
		t.Fatalf("walkthrough: %v\n%s", err, out.String())
	}
	got := strings.NewReplacer("http://"+payAddr, "http://localhost:8080", "http://"+ledAddr, "http://localhost:8081").Replace(out.String())

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
}

var (
	uuidRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRe = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
)

func normalize(s string) string {
	s = uuidRe.ReplaceAllString(s, "<uuid>")
	s = timeRe.ReplaceAllString(s, "<time>")
	return strings.TrimSpace(s)
}

// composeEnv returns the environment docker-compose.yml gives each service.
func composeEnv(t *testing.T) map[string]map[string]string {
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
	out := map[string]map[string]string{}
	for _, name := range []string{"payments", "ledger"} {
		out[name] = map[string]string{}
		for k, v := range p.Services[name].Environment {
			if v != nil {
				out[name][k] = *v
			}
		}
	}
	return out
}

// start builds cmd/<name> and runs it with env (and PATH and HOME only). At
// the end of the test it sends SIGTERM and requires a clean exit: graceful
// shutdown is part of what is tested.
func start(t *testing.T, bin, name string, env map[string]string) {
	t.Helper()
	exe := filepath.Join(bin, name)
	build := exec.Command("go", "build", "-o", exe, "../"+name)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, out)
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logs, err := os.Create(filepath.Join(bin, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s did not exit cleanly on SIGTERM: %v", name, err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("%s still running 30s after SIGTERM", name)
		}
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("%s log:\n%s", name, b)
		}
		logs.Close()
	})
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond) // polling a server that is starting up
	}
	t.Fatalf("%s not ready within 60s", base)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
