package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/tools/internal/proc"
)

const repo = "../.."

// loadTestStack loads docker-compose.yml with env as the environment.
func loadTestStack(t *testing.T, env ...string) *stack {
	t.Helper()
	s, err := loadStack(context.Background(), repo, env)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The table of host ports is docker-compose.yml's: each variable moves the
// port it names, and nothing else; unset, each is compose's default.
func TestHostPortsAreComposes(t *testing.T) {
	t.Parallel()
	defaults := loadTestStack(t)
	for i, hp := range hostPorts {
		moved := 40000 + i
		s := loadTestStack(t, fmt.Sprintf("%s=%d", hp.variable, moved))
		if got := s.port(hp.service, hp.target); got != moved {
			t.Errorf("%s=%d: %s's port %d is published on %d; the variable moves another port", hp.variable, moved, hp.service, hp.target, got)
		}
		for _, other := range hostPorts {
			if other != hp && s.port(other.service, other.target) != defaults.port(other.service, other.target) {
				t.Errorf("%s moved %s's port %d too", hp.variable, other.service, other.target)
			}
		}
	}
}

// Each service gets compose's command and environment, moved from the
// compose network to loopback, its secrets and settings untouched.
func TestUnitsAreComposesOnLoopback(t *testing.T) {
	t.Parallel()
	s := loadTestStack(t, "PAYMENTS_HOST_PORT=18080", "WEBHOOKS_OPS_HOST_PORT=19092")
	const endpoint = "http://127.0.0.1:24566"
	wh, err := s.unit("webhooks", endpoint)
	if err != nil {
		t.Fatal(err)
	}
	compose := s.project.Services["webhooks"].Environment
	for k, want := range map[string]string{
		"DATABASE_URL":          "postgres://postgres:postgres@127.0.0.1:5432/webhooks?sslmode=disable",
		"HTTP_ADDR":             "127.0.0.1:8082",
		"OPS_ADDR":              "127.0.0.1:19092",
		"WEBHOOKS_PAYMENTS_URL": "http://127.0.0.1:18080",
		"WEBHOOKS_QUEUE_URL":    endpoint + "/000000000000/webhooks-queue",
		"AWS_ENDPOINT_URL":      endpoint,
		"WEBHOOKS_SECRETS_KEY":  *compose["WEBHOOKS_SECRETS_KEY"],
	} {
		if got := wh.env[k]; got != want {
			t.Errorf("webhooks: %s = %q, want %q", k, got, want)
		}
	}
	if len(wh.env) != len(compose) {
		t.Errorf("webhooks gets %d variables, compose gives it %d", len(wh.env), len(compose))
	}
	if wh.target != "webhooks" {
		t.Errorf("webhooks runs the binary %q", wh.target)
	}

	r, err := s.unit("webhook-receiver", endpoint)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(repo)
	if got, want := strings.Join(r.args, " "), "-addr 127.0.0.1:8083"; got != want {
		t.Errorf("the receiver runs with %q, want %q", got, want)
	}
	if got, want := r.env["WEBHOOKS_RECEIVER_SECRETS_FILE"], filepath.Join(abs, ".webhook-receiver", "secret"); got != want {
		t.Errorf("the receiver reads %q, want %q: the file compose mounts, where make demo writes", got, want)
	}

	key, err := s.unit("demo-key", endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if key.target != "payments" || len(key.args) < 2 || key.args[0] != "apikey" {
		t.Errorf("demo-key runs %s %v, want payments apikey create …", key.target, key.args)
	}
}

func TestStatements(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repo, "scripts", "create-databases.sql"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(statements(string(b)), "|")
	if want := "CREATE DATABASE payments|CREATE DATABASE ledger|CREATE DATABASE webhooks"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// bare is a machine with nothing on it: no PATH entries, no Postgres.
func bare(euid int) machine {
	return machine{
		lookPath: func(name string) (string, error) { return "", exec.ErrNotFound },
		glob:     func(string) ([]string, error) { return nil, nil },
		output:   func(string, ...string) ([]byte, error) { return nil, errors.New("not here") },
		geteuid:  func() int { return euid },
		lookUser: func(string) (*user.User, error) { return nil, user.UnknownUserError("postgres") },
	}
}

// make dev names every missing piece before it starts anything: the reader
// learns what to install or which variable to set, all at once.
func TestMakeDevNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() }) // after the parallel subtests, unlike a defer
	port := strconv.Itoa(taken.Addr().(*net.TCPAddr).Port)
	noBinaries := t.TempDir()

	withPython := bare(1000)
	withPython.lookPath = func(name string) (string, error) {
		if name == "python3" || name == "bash" || name == "aws" {
			return "/usr/bin/" + name, nil
		}
		return "", exec.ErrNotFound
	}
	withPython.output = func(string, ...string) ([]byte, error) {
		return []byte("Traceback …\nModuleNotFoundError: No module named 'moto'\n"), errors.New("exit status 1")
	}

	for _, tc := range []struct {
		name string
		m    machine
		env  map[string]string
		want []string
	}{
		{"nothing installed", bare(1000), map[string]string{"PAYMENTS_HOST_PORT": port}, []string{
			"no PostgreSQL server binaries (initdb, postgres): looked in pg_config (not on PATH), /usr/lib/postgresql/*/bin, PATH",
			"no python3 on PATH",
			"no aws CLI on PATH",
			"no bash on PATH",
			"127.0.0.1:" + port + " is taken (PAYMENTS_HOST_PORT, for payments): stop what listens there, or move it",
		}},
		{"a PG_BINDIR without the binaries", bare(1000), map[string]string{"PG_BINDIR": noBinaries}, []string{
			"looked in PG_BINDIR=" + noBinaries,
		}},
		{"root without a postgres user", bare(0), nil, []string{
			"make dev runs as root, as which Postgres refuses to run, and there is no user postgres",
		}},
		{"python3 without moto", withPython, nil, []string{
			"python3 (/usr/bin/python3) cannot import moto's server",
			"No module named 'moto'",
		}},
		{"the SNS/SQS endpoint the user names: no python3 needed, nor its port", bare(1000), map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:" + port, "LOCALSTACK_HOST_PORT": port}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			getenv := func(k string) string { return tc.env[k] }
			var environ []string
			for k, v := range tc.env {
				environ = append(environ, k+"="+v)
			}
			var out strings.Builder
			err := run(context.Background(), []string{"-repo", repo, "-state", t.TempDir()}, getenv, environ, &out, tc.m)
			if !errors.Is(err, errMissing) {
				t.Fatalf("got %v, want make dev to refuse before starting anything", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q:\n%v", want, err)
				}
			}
			if tc.want == nil {
				if strings.Contains(err.Error(), "python3") || strings.Contains(err.Error(), "LOCALSTACK_HOST_PORT") {
					t.Errorf("with AWS_ENDPOINT_URL, make dev needs no moto nor its port:\n%v", err)
				}
			}
			if out.Len() != 0 {
				t.Errorf("it started something:\n%s", out.String())
			}
		})
	}
}

// syncBuffer is what run writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMakeDev runs make dev with this machine's Postgres binaries and moto
// on free ports, runs the README walkthrough against it with what demo.mk
// tells make demo, then stops it as Ctrl-C does and requires that nothing
// it started is left: no process, no port, no Postgres directory, no
// demo.mk. It takes a minute or two, so it runs under CI (where a skip
// fails) or with MAKE_DEV_TEST=1.
func TestMakeDev(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Postgres, moto and the services")
	}
	if os.Getenv("CI") == "" && os.Getenv("MAKE_DEV_TEST") == "" {
		t.Skip("runs the whole make dev (a minute or two): set MAKE_DEV_TEST=1 to run it; CI runs it")
	}
	env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME")}
	ports, err := proc.FreePorts(len(hostPorts))
	if err != nil {
		t.Fatal(err)
	}
	for i, hp := range hostPorts {
		env[hp.variable] = strconv.Itoa(ports[i])
	}
	// The secret make demo hands the receiver goes to the file compose
	// mounts, in the repository: keep what a developer had there.
	secretFile := filepath.Join(repo, ".webhook-receiver", "secret")
	if before, err := os.ReadFile(secretFile); err == nil {
		t.Cleanup(func() { _ = os.WriteFile(secretFile, before, 0o644) })
	} else {
		t.Cleanup(func() { _ = os.Remove(secretFile) })
	}

	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	state := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-repo", repo, "-state", state}, func(k string) string { return env[k] }, environ, out, realMachine())
	}()

	demoMk := filepath.Join(state, "demo.mk")
	deadline := time.After(5 * time.Minute)
	for ready := false; !ready; {
		select {
		case err := <-done:
			t.Fatalf("make dev ended before the stack was up: %v\n%s", err, out.String())
		case <-deadline:
			cancel()
			<-done
			t.Fatalf("the stack is not up after 5 minutes:\n%s", out.String())
		case <-time.After(200 * time.Millisecond): // polling for demo.mk, written once all is ready
			_, err := os.Stat(demoMk)
			ready = err == nil
		}
	}
	mk, err := os.ReadFile(demoMk)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_]+) := (.*)$`).FindAllStringSubmatch(string(mk), -1) {
		vars[m[1]] = m[2]
	}
	for _, hp := range hostPorts {
		if vars[hp.variable] != env[hp.variable] {
			t.Errorf("demo.mk sets %s=%s, make dev listens on %s", hp.variable, vars[hp.variable], env[hp.variable])
		}
	}

	// make demo's command, with what demo.mk sets.
	walkthrough := filepath.Join(t.TempDir(), "walkthrough")
	if b, err := exec.Command("go", "build", "-o", walkthrough, "../walkthrough").CombinedOutput(); err != nil {
		t.Fatalf("go build ../walkthrough: %v\n%s", err, b)
	}
	url := func(variable string) string { return "http://localhost:" + vars[variable] }
	demo := exec.Command(walkthrough, "-payments", url("PAYMENTS_HOST_PORT"), "-ledger", url("LEDGER_HOST_PORT"),
		"-payments-ops", url("PAYMENTS_OPS_HOST_PORT"), "-webhooks", url("WEBHOOKS_HOST_PORT"), "-webhooks-ops", url("WEBHOOKS_OPS_HOST_PORT"),
		"-receiver-secret-file", secretFile, "-receiver-url", vars["DEMO_RECEIVER_URL"], "-receiver-logs", vars["DEMO_RECEIVER_LOGS"])
	if b, err := demo.CombinedOutput(); err != nil {
		t.Errorf("make demo against make dev: %v\n%s\nmake dev:\n%s", err, b, out.String())
	}

	// Ctrl-C.
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("make dev stopped with %v\n%s", err, out.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("make dev did not stop within 2 minutes:\n%s", out.String())
	}
	m := regexp.MustCompile(`its data in (\S+) `).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("make dev did not say where Postgres' data is:\n%s", out.String())
	}
	pgDir := m[1]
	if _, err := os.Stat(pgDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there (%v)", pgDir, err)
	}
	if _, err := os.Stat(demoMk); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("demo.mk is still there (%v): make demo would use a stack that is gone", err)
	}
	for _, hp := range hostPorts {
		ln, err := net.Listen("tcp", "127.0.0.1:"+env[hp.variable])
		if err != nil {
			t.Errorf("port %s (%s) is still taken after make dev stopped: %v", env[hp.variable], hp.variable, err)
			continue
		}
		ln.Close()
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // ended meanwhile
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, state) || strings.Contains(cmd, pgDir) || strings.Contains(cmd, "-p "+env["LOCALSTACK_HOST_PORT"]) {
			t.Errorf("still running after make dev stopped: %s (%s)", cmd, p)
		}
	}
}
