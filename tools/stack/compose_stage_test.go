//go:build composestage

package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestComposeStage runs against the stack `docker compose up --build --wait`
// started (scripts/compose-stage.sh, which builds this file with the
// composestage tag; nothing else does): every container is healthy and every
// one-shot job exited 0, the services run as 65532 with no shell, the README's
// walkthrough gives the README's output, and a restart and two SIGKILLs under
// light traffic lose no payment. The docker CLI it calls inherits the stage's
// DOCKER_HOST, DOCKER_CONFIG and COMPOSE_FILE, and the host ports come from
// the same variables compose reads.
func TestComposeStage(t *testing.T) {
	st := newStage(t)
	t.Run("every container is healthy and every one-shot job exited 0", st.healthy)
	t.Run("the services run as 65532 with no shell", st.nonRoot)
	if t.Failed() {
		t.FailNow()
	}
	t.Run("make demo gives the README's walkthrough", st.walkthrough)
	t.Run("a restart and SIGKILLs under traffic lose no payment", st.restartsUnderTraffic)
}

// The demo's credentials, published in docker-compose.yml.
const (
	stageAPIKey      = "pk_test_demodemodemodemo_apublicdemokeyfromdockercomposeyamlneveruseitforreal"
	stageLedgerToken = "demo-operator-token-of-docker-compose-not-a-secret"
)

type stage struct {
	ports  map[string]string // compose's host port variable -> port
	client *http.Client
}

// composeDefaults are the host ports docker-compose.yml publishes when its
// variables are unset: the README's.
var composeDefaults = map[string]string{
	"PAYMENTS_HOST_PORT": "8080", "LEDGER_HOST_PORT": "8081", "WEBHOOKS_HOST_PORT": "8082",
	"PAYMENTS_OPS_HOST_PORT": "9090", "LEDGER_OPS_HOST_PORT": "9091", "WEBHOOKS_OPS_HOST_PORT": "9092",
}

func newStage(t *testing.T) *stage {
	st := &stage{ports: map[string]string{}, client: &http.Client{Timeout: 10 * time.Second}}
	for name, def := range composeDefaults {
		st.ports[name] = def
		if v := os.Getenv(name); v != "" {
			st.ports[name] = v
		}
	}
	if _, err := docker(t, "compose", "ps", "-q"); err != nil {
		t.Fatalf("no compose stack to test (run scripts/compose-stage.sh): %v", err)
	}
	return st
}

func (st *stage) url(portVar, path string) string {
	return "http://127.0.0.1:" + st.ports[portVar] + path
}

// docker runs the docker CLI from the repository root, where compose finds
// its project.
func docker(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)+" "+stderr.String()))
	}
	return string(out), nil
}

func mustDocker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := docker(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// stageService is what `docker compose config` says of a service, as the
// stage ran it (with the stand-ins' override, if any).
type stageService struct {
	Image   string `json:"image"`
	Restart string `json:"restart"`
	Build   *struct {
		Target string `json:"target"`
	} `json:"build"`
}

func services(t *testing.T) map[string]stageService {
	t.Helper()
	var cfg struct {
		Services map[string]stageService `json:"services"`
	}
	if err := json.Unmarshal([]byte(mustDocker(t, "compose", "config", "--format", "json")), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.Services
}

// container is a line of `docker compose ps --all --format json`.
type container struct {
	ID       string `json:"ID"`
	Service  string `json:"Service"`
	State    string `json:"State"`
	Health   string `json:"Health"`
	ExitCode int    `json:"ExitCode"`
}

func containers(t *testing.T) map[string]container {
	t.Helper()
	out := map[string]container{}
	sc := bufio.NewScanner(strings.NewReader(mustDocker(t, "compose", "ps", "--all", "--format", "json")))
	for sc.Scan() {
		var c container
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("docker compose ps: %v: %s", err, sc.Text())
		}
		out[c.Service] = c
	}
	return out
}

func (st *stage) healthy(t *testing.T) {
	running := containers(t)
	for name, svc := range services(t) {
		c, ok := running[name]
		switch {
		case !ok:
			t.Errorf("%s: no container", name)
		case svc.Restart == "no": // a one-shot job
			if c.State != "exited" || c.ExitCode != 0 {
				t.Errorf("one-shot %s: %s, exit code %d; want exited 0", name, c.State, c.ExitCode)
			}
		case c.State != "running" || c.Health != "healthy":
			t.Errorf("%s: %s, health %q; want running and healthy", name, c.State, c.Health)
		}
	}
}

// nonRoot checks every long-running container built from the Dockerfile: its
// processes run as 65532 (ps on the engine's host, through docker top), and
// it has no shell to exec.
func (st *stage) nonRoot(t *testing.T) {
	running := containers(t)
	for name, svc := range services(t) {
		if svc.Build == nil || svc.Restart == "no" {
			continue
		}
		id := running[name].ID
		out := mustDocker(t, "top", id, "-o", "pid,uid,gid,args")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 2 {
			t.Errorf("%s: docker top shows no process:\n%s", name, out)
			continue
		}
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			if len(f) < 4 || f[1] != "65532" || f[2] != "65532" {
				t.Errorf("%s: a process runs as uid %s gid %s, want 65532: %s", name, f[1], f[2], l)
			}
		}
		_, err := docker(t, "exec", id, "/bin/sh", "-c", "true")
		if err == nil {
			t.Errorf("%s: /bin/sh ran in the container; the runtime image must have no shell", name)
		} else if !strings.Contains(err.Error(), "no such file or directory") && !strings.Contains(err.Error(), "not found") {
			t.Errorf("%s: exec /bin/sh failed, but not for want of a shell: %v", name, err)
		}
	}
}

// walkthrough runs `make demo`, as the README says, and compares its output
// with the README's walkthrough section, ids, times and secrets aside, as the
// walkthrough's own test does against the binaries.
func (st *stage) walkthrough(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-s", "demo")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make demo: %v\n%s\n%s", err, out, stderr.String())
	}
	// The README's run used the key order-1001 and compose's ports; make
	// demo's key is the time (so that a second run makes new payments), and
	// the stage's ports are free ones.
	got := regexp.MustCompile(`\border-\d{14}\b`).ReplaceAllString(string(out), "order-1001")
	for name, def := range composeDefaults {
		got = strings.ReplaceAll(got, "http://localhost:"+st.ports[name]+"/", "http://localhost:"+def+"/")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<!-- walkthrough:start -->\n(.*)<!-- walkthrough:end -->`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no <!-- walkthrough:start --> … <!-- walkthrough:end --> section")
	}
	if g, w := normalizeWalkthrough(got), normalizeWalkthrough(string(m[1])); g != w {
		t.Errorf("make demo's output differs from README.md's walkthrough (ids and times aside); first difference:\n%s", firstDifference(g, w))
	} else {
		t.Logf("make demo: %d lines, the README's walkthrough", strings.Count(g, "\n")+1)
	}
}

// normalizeWalkthrough hides what differs from run to run, as
// tools/walkthrough's test does: UUIDs, times, the webhooks service's ids,
// the endpoint's secret and an attempt's latency.
func normalizeWalkthrough(s string) string {
	for _, r := range []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<uuid>"},
		{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`), "<time>"},
		{regexp.MustCompile(`\b(we|wa)_[0-9a-f]{32}\b`), "${1}_<id>"},
		{regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`), "whsec_<secret>"},
		{regexp.MustCompile(`"latency_ms":\d+`), `"latency_ms":<n>`},
	} {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return strings.TrimSpace(s)
}

func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d\n got: %s\nwant: %s", i+1, gl, wl)
		}
	}
	return "none"
}

// The traffic: automatic payments of one payer, in a currency the walkthrough
// does not use, so that the merchant's and the payer's balances in it are
// exactly what these payments add up to.
const (
	trafficCurrency = "EUR"
	trafficPayer    = "cus_compose_stage"
	trafficRate     = 4 // payments a second, at most
)

// restartsUnderTraffic sends payments while the ledger restarts (docker
// compose restart: SIGTERM, its grace period, a new start), then while
// payments and then the ledger are SIGKILLed: their main process killed on the
// engine's host, as a crash would, which the restart policy answers. Every
// payment is retried with its Idempotency-Key until it is accepted. Then
// every accepted payment must reach the ledger exactly once: one ledger
// transaction each, and the merchant's and the payer's balances equal to
// their sum; and the outbox must be empty.
func (st *stage) restartsUnderTraffic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	tr := &traffic{stage: st, run: run, accepted: map[string]int64{}}
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tr.send(trafficCtx)
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopTraffic()
			wg.Wait()
		}
	}
	defer stop()

	tr.waitFor(ctx, t, 20)
	t.Log("docker compose restart ledger")
	mustDocker(t, "compose", "restart", "ledger")
	st.waitHealthy(ctx, t, "ledger", -1)
	tr.waitFor(ctx, t, tr.count()+20)

	for _, service := range []string{"payments", "ledger"} {
		restarts := st.sigkill(t, service)
		st.waitHealthy(ctx, t, service, restarts+1)
		tr.waitFor(ctx, t, tr.count()+20)
	}
	stop()
	if tr.err != nil {
		t.Fatalf("traffic: %v", tr.err)
	}
	t.Logf("%d payments accepted, %d %s in all; %d requests failed and were retried", len(tr.accepted), tr.sum, trafficCurrency, tr.retries)

	st.checkLedger(ctx, t, tr)
	st.checkOutboxEmpty(ctx, t)
}

// sigkill kills service's main process with SIGKILL from the engine's host
// and returns the container's restart count before. The engine must be on
// this machine: a process id from docker inspect means nothing elsewhere.
func (st *stage) sigkill(t *testing.T, service string) int {
	t.Helper()
	id := strings.TrimSpace(mustDocker(t, "compose", "ps", "-q", service))
	out := strings.Fields(mustDocker(t, "inspect", "-f", "{{.State.Pid}} {{.RestartCount}}", id))
	pid, err := strconv.Atoi(out[0])
	if err != nil || pid <= 0 {
		t.Fatalf("%s: no process id (%v)", service, out)
	}
	restarts, _ := strconv.Atoi(out[1])
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		t.Fatalf("%s: process %d is not on this machine: the SIGKILL step needs a local engine", service, pid)
	}
	t.Logf("SIGKILL %s (pid %d)", service, pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -KILL %d: %v", pid, err)
	}
	return restarts
}

// waitHealthy waits until service's container is running and healthy again,
// after at least minRestarts restarts by the engine (-1: any).
func (st *stage) waitHealthy(ctx context.Context, t *testing.T, service string, minRestarts int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var last string
	for time.Now().Before(deadline) && ctx.Err() == nil {
		id := strings.TrimSpace(mustDocker(t, "compose", "ps", "-q", service))
		if id != "" {
			out, err := docker(t, "inspect", "-f", "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}} {{.RestartCount}}", id)
			if err == nil {
				last = strings.TrimSpace(out)
				f := strings.Fields(last)
				if len(f) == 3 && f[0] == "running" && f[1] == "healthy" {
					n, _ := strconv.Atoi(f[2])
					if minRestarts < 0 || n >= minRestarts {
						t.Logf("%s healthy again (restart count %d)", service, n)
						return
					}
				}
			}
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("%s did not come back healthy within 3 minutes (state, health, restarts: %s)", service, last)
}

type traffic struct {
	stage *stage
	run   string

	mu       sync.Mutex
	accepted map[string]int64 // payment id -> amount
	sum      int64
	retries  int
	err      error // why send gave up
}

func (tr *traffic) count() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.accepted)
}

// waitFor waits until n payments were accepted.
func (tr *traffic) waitFor(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for tr.count() < n {
		tr.mu.Lock()
		err := tr.err
		tr.mu.Unlock()
		if err != nil {
			t.Fatalf("traffic: %v", err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("traffic: %d payments accepted, waited for %d", tr.count(), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// send makes payments, trafficRate a second at most, until ctx is done. Each
// is retried with its Idempotency-Key until accepted, for up to two minutes.
func (tr *traffic) send(ctx context.Context) {
	tick := time.NewTicker(time.Second / trafficRate)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		amount := int64(100 + n%50)
		id, err := tr.pay(ctx, fmt.Sprintf("compose-stage-%s-%d", tr.run, n), amount)
		if ctx.Err() != nil {
			return // stopping: a payment being retried is not counted
		}
		tr.mu.Lock()
		if err != nil {
			tr.err = err
			tr.mu.Unlock()
			return
		}
		tr.accepted[id] = amount
		tr.sum += amount
		tr.mu.Unlock()
	}
}

func (tr *traffic) pay(ctx context.Context, key string, amount int64) (string, error) {
	body := fmt.Sprintf(`{"amount": %d, "currency": %q, "payer_id": %q, "description": "compose stage"}`, amount, trafficCurrency, trafficPayer)
	giveUp := time.Now().Add(2 * time.Minute)
	for {
		status, resp, err := tr.stage.request(ctx, "POST", tr.stage.url("PAYMENTS_HOST_PORT", "/payments"), stageAPIKey, key, body)
		if err == nil && status == http.StatusCreated {
			var p struct {
				ID     string `json:"id"`
				Amount int64  `json:"amount"`
			}
			if err := json.Unmarshal(resp, &p); err != nil || p.ID == "" || p.Amount != amount {
				return "", fmt.Errorf("payment %s: answer %s", key, resp)
			}
			return p.ID, nil
		}
		// A connection refused or reset while payments restarts, a 5xx, or
		// a 409 while the key's first request is still in flight: retry.
		if err == nil && status < 500 && status != http.StatusConflict {
			return "", fmt.Errorf("payment %s: %d %s", key, status, resp)
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if time.Now().After(giveUp) {
			return "", fmt.Errorf("payment %s not accepted within 2 minutes: %d %s %v", key, status, resp, err)
		}
		tr.mu.Lock()
		tr.retries++
		tr.mu.Unlock()
		time.Sleep(250 * time.Millisecond)
	}
}

func (st *stage) request(ctx context.Context, method, url, token, idempotencyKey, body string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	res, err := st.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// balance is an account's balance in the traffic's currency, 0 when it has
// none yet.
func (st *stage) balance(ctx context.Context, account string) (int64, error) {
	status, body, err := st.request(ctx, "GET", st.url("LEDGER_HOST_PORT", "/accounts/"+account+"/balance"), stageLedgerToken, "", "")
	if err != nil {
		return 0, err
	}
	if status == http.StatusNotFound {
		return 0, nil
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("%s balance: %d %s", account, status, body)
	}
	var b struct {
		Balances []struct {
			Currency string `json:"currency"`
			Posted   int64  `json:"posted"`
		} `json:"balances"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return 0, fmt.Errorf("%s balance: %w: %s", account, err, body)
	}
	for _, c := range b.Balances {
		if c.Currency == trafficCurrency {
			return c.Posted, nil
		}
	}
	return 0, nil
}

// checkLedger waits (up to 3 minutes) for the balances to reach the accepted
// payments' sum, then checks each payment has exactly one ledger transaction
// of its amount.
func (st *stage) checkLedger(ctx context.Context, t *testing.T, tr *traffic) {
	merchantAcct, payerAcct := "merchant:mer_1", "payer:mer_1:"+trafficPayer
	deadline := time.Now().Add(3 * time.Minute)
	var merchant, payer int64
	var err error
	for {
		merchant, err = st.balance(ctx, merchantAcct)
		if err == nil {
			payer, err = st.balance(ctx, payerAcct)
		}
		if err == nil && merchant == tr.sum && payer == -tr.sum {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 3 minutes: %s %d %s, %s %d; the %d accepted payments add up to %d (%v)",
				merchantAcct, merchant, trafficCurrency, payerAcct, payer, len(tr.accepted), tr.sum, err)
		}
		time.Sleep(time.Second)
	}
	t.Logf("%s %d %s, %s %d: the accepted payments' sum", merchantAcct, merchant, trafficCurrency, payerAcct, payer)

	for id, amount := range tr.accepted {
		status, body, err := st.request(ctx, "GET", st.url("LEDGER_HOST_PORT", "/payments/"+id+"/entries"), stageLedgerToken, "", "")
		if err != nil || status != http.StatusOK {
			t.Errorf("payment %s entries: %d %s %v", id, status, body, err)
			continue
		}
		var e struct {
			Transactions []struct {
				Kind   string `json:"kind"`
				Amount int64  `json:"amount"`
			} `json:"transactions"`
		}
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("payment %s entries: %v: %s", id, err, body)
			continue
		}
		if len(e.Transactions) != 1 || e.Transactions[0].Kind != "payment" || e.Transactions[0].Amount != amount {
			t.Errorf("payment %s of %d: ledger transactions %s, want one payment of %d", id, amount, body, amount)
		}
	}
}

// checkOutboxEmpty waits (up to a minute) for payments' outbox to hold no
// pending row, and checks it holds no dead one.
func (st *stage) checkOutboxEmpty(ctx context.Context, t *testing.T) {
	deadline := time.Now().Add(time.Minute)
	for {
		m, err := st.metrics(ctx, st.url("PAYMENTS_OPS_HOST_PORT", "/metrics"))
		if err == nil && m["outbox_dead_rows"] != 0 {
			t.Fatalf("outbox_dead_rows %v, want 0", m["outbox_dead_rows"])
		}
		if err == nil && m["outbox_pending_rows"] == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: outbox_pending_rows %v (%v), want 0", m["outbox_pending_rows"], err)
		}
		time.Sleep(time.Second)
	}
}

func (st *stage) metrics(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	res, err := st.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, errors.New(url + ": " + res.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && !strings.HasPrefix(f[0], "#") && !strings.Contains(f[0], "{") {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				out[f[0]] = v
			}
		}
	}
	return out, sc.Err()
}
