package stack

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
)

// The health checks that gate the stack are shell commands that run inside
// the containers. These tests take each command as docker-compose.yml states
// it and run it with sh -c here, against the answers it must tell apart.

// healthcheckCommand returns the CMD-SHELL command of service's healthcheck.
func healthcheckCommand(t *testing.T, service string) string {
	t.Helper()
	hc := loadCompose(t).Services[service].HealthCheck
	if hc == nil || len(hc.Test) != 2 || hc.Test[0] != "CMD-SHELL" {
		t.Fatalf("%s: healthcheck test is %v, want [CMD-SHELL command]", service, hc)
	}
	return hc.Test[1]
}

// runShell runs command with sh -c and the given extra environment, and
// returns its combined output and whether it exited 0.
func runShell(t *testing.T, command string, env ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command("sh", "-c", command)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("sh -c: %v", err)
	}
	return string(out), err == nil
}

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the healthcheck cannot run here", tool)
		}
	}
}

// Answers of LocalStack's GET /_localstack/init/ready, in the shape its
// InitScriptsStageResource returns: the stage's "completed" flag and each
// script's stage, file name and state (UNKNOWN, RUNNING, SUCCESSFUL, ERROR).
// LocalStack sets "completed" in a finally block, so a failed script reads
// completed true with state ERROR.
var initReadyAnswers = []struct {
	name    string
	status  int
	body    string
	healthy bool
}{
	{"script succeeded", 200,
		`{"completed": true, "scripts": [{"stage": "READY", "name": "init-aws.sh", "state": "SUCCESSFUL"}]}`, true},
	{"script failed, e.g. in a CRLF checkout", 200,
		`{"completed": true, "scripts": [{"stage": "READY", "name": "init-aws.sh", "state": "ERROR"}]}`, false},
	{"script still running", 200,
		`{"completed": false, "scripts": [{"stage": "READY", "name": "init-aws.sh", "state": "RUNNING"}]}`, false},
	{"ready stage not reached", 200,
		`{"completed": false, "scripts": [{"stage": "READY", "name": "init-aws.sh", "state": "UNKNOWN"}]}`, false},
	{"hook not mounted", 200,
		`{"completed": true, "scripts": []}`, false},
	{"another hook failed", 200,
		`{"completed": true, "scripts": [{"stage": "READY", "name": "init-aws.sh", "state": "SUCCESSFUL"}, {"stage": "READY", "name": "extra.sh", "state": "ERROR"}]}`, false},
	{"LocalStack not serving yet", 503, `{"status": "starting"}`, false},
}

func TestLocalStackHealthcheckNeedsASuccessfulHook(t *testing.T) {
	needTools(t, "curl", "python3")
	const endpoint = "http://localhost:4566/_localstack/init/ready"
	command := healthcheckCommand(t, "localstack")
	if strings.Count(command, endpoint) != 1 {
		t.Fatalf("the localstack healthcheck should ask %s once:\n%s", endpoint, command)
	}
	for _, a := range initReadyAnswers {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/_localstack/init/ready" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(a.status)
				_, _ = w.Write([]byte(a.body))
			}))
			defer srv.Close()
			out, healthy := runShell(t, strings.Replace(command, endpoint, srv.URL+"/_localstack/init/ready", 1))
			if healthy != a.healthy {
				t.Errorf("healthy = %v, want %v for %s\noutput: %s", healthy, a.healthy, a.body, out)
			}
		})
	}
	t.Run("LocalStack not listening", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if out, healthy := runShell(t, strings.Replace(command, endpoint, "http://"+addr+"/_localstack/init/ready", 1)); healthy {
			t.Errorf("healthy with nothing listening\noutput: %s", out)
		}
	})
}

// The Postgres healthcheck connects over TCP to 127.0.0.1, so that it cannot
// pass while the image's init scripts run on a socket-only server, and passes
// only once every service's database exists. It runs here against the test
// server, with databases of this test standing in for payments, ledger and
// webhooks.
func TestPostgresHealthcheckNeedsTCPAndEveryDatabase(t *testing.T) {
	needTools(t, "pg_isready", "psql")
	command := healthcheckCommand(t, "postgres")
	if n := strings.Count(command, "-h 127.0.0.1"); n != 2 {
		t.Errorf("want pg_isready and psql both on -h 127.0.0.1 (TCP), found %d in:\n%s", n, command)
	}
	if !strings.Contains(command, "'payments'") || !strings.Contains(command, "'ledger'") || !strings.Contains(command, "'webhooks'") {
		t.Fatalf("the postgres healthcheck should name every service's database:\n%s", command)
	}
	admin, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	if h := admin.Hostname(); h != "127.0.0.1" && h != "localhost" {
		t.Skipf("the healthcheck talks to 127.0.0.1; the test server is on %s", h)
	}
	if u := admin.User.Username(); u != "postgres" {
		t.Skipf("the healthcheck connects as postgres; the test server's user is %s", u)
	}
	password, _ := admin.User.Password()
	env := []string{"PGPORT=" + admin.Port(), "POSTGRES_PASSWORD=" + password, "PGCONNECT_TIMEOUT=5"}

	dbName := func(rawURL string) string {
		u, err := url.Parse(rawURL)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimPrefix(u.Path, "/")
	}
	payments, ledger, webhooks := dbName(pgtest.NewDatabase(t)), dbName(pgtest.NewDatabase(t)), dbName(pgtest.NewDatabase(t))
	withDatabases := func(p, l, w string) string {
		return strings.NewReplacer("'payments'", "'"+p+"'", "'ledger'", "'"+l+"'", "'webhooks'", "'"+w+"'").Replace(command)
	}

	if out, healthy := runShell(t, withDatabases(payments, ledger, webhooks), env...); !healthy {
		t.Errorf("every database exists, yet unhealthy\noutput: %s", out)
	}
	if out, healthy := runShell(t, withDatabases(payments, ledger+"_missing", webhooks), env...); healthy {
		t.Errorf("healthy with the ledger database missing\noutput: %s", out)
	}
	if out, healthy := runShell(t, withDatabases(payments, ledger, webhooks+"_missing"), env...); healthy {
		t.Errorf("healthy with the webhooks database missing\noutput: %s", out)
	}
	conn, err := pgx.Connect(context.Background(), admin.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "DROP DATABASE "+payments+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	if out, healthy := runShell(t, withDatabases(payments, ledger, webhooks), env...); healthy {
		t.Errorf("healthy after the payments database was dropped\noutput: %s", out)
	}
	if out, healthy := runShell(t, withDatabases(payments, ledger, webhooks), "PGPORT=1", "PGCONNECT_TIMEOUT=5"); healthy {
		t.Errorf("healthy with nothing listening on TCP\noutput: %s", out)
	}
}
