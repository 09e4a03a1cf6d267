package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// TestMain stops the Postgres container pgtest may start; a LocalStack
// container, if awstest started one, is left to the testcontainers reaper.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// getenvFrom is a getenv of vars. PAYMENTS_PUBLIC_KEYS, which every
// consuming ledger needs and few tests here are about, defaults to
// testKey's; a test sets it, even to "", to say otherwise.
func getenvFrom(vars map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		if k == "PAYMENTS_PUBLIC_KEYS" {
			return testKey.PublicKey().String()
		}
		return ""
	}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x", "LEDGER_QUEUE_URL": "http://q", "LEDGER_DLQ_URL": "http://d"}
	tests := []struct {
		name, key, value string
	}{
		{"missing database", "DATABASE_URL", ""},
		{"missing queue", "LEDGER_QUEUE_URL", ""},
		{"missing dlq", "LEDGER_DLQ_URL", ""},
		{"bad workers", "LEDGER_WORKERS", "many"},
		{"zero workers", "LEDGER_WORKERS", "0"},
		{"bad retention", "INBOX_RETENTION", "15 days"},
		{"bad unhandled retention", "INBOX_UNHANDLED_RETENTION", "a fortnight"},
		{"bad level", "LOG_LEVEL", "loud"},
		{"bad migrate flag", "MIGRATE_ON_START", "perhaps"},
		{"wait past the SQS maximum", "LEDGER_WAIT_TIME", "25s"},
		{"wait not in whole seconds", "LEDGER_WAIT_TIME", "1500ms"},
		{"bad shutdown timeout", "SHUTDOWN_TIMEOUT", "soon"},
		{"short operator token", "LEDGER_API_TOKENS", "letmein"},
		{"ops on the public port", "OPS_ADDR", "127.0.0.1:8081"},
		{"unknown inbox mode", "LEDGER_INBOX_MODE", "later"},
		{"negative inbox workers", "LEDGER_INBOX_WORKERS", "-1"},
		{"empty inbox batch", "LEDGER_INBOX_BATCH_SIZE", "0"},
		{"no inbox attempts", "LEDGER_INBOX_MAX_ATTEMPTS", "0"},
		{"bad inbox poll", "LEDGER_INBOX_POLL_INTERVAL", "often"},
		{"a public key that is not one", "PAYMENTS_PUBLIC_KEYS", "k1:c2hvcnQ="},
		{"a public key without its id", "PAYMENTS_PUBLIC_KEYS", testKey.PublicKey().String()[len(testKey.KeyID())+1:]},
		{"unknown unsigned events policy", "PAYMENTS_UNSIGNED_EVENTS", "sometimes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{}
			for k, v := range base {
				vars[k] = v
			}
			vars[tt.key] = tt.value
			err := run(context.Background(), nil, getenvFrom(vars), io.Discard, nil)
			if err == nil || !strings.Contains(err.Error(), tt.key) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line naming %s", err, tt.key)
			}
		})
	}
	if err := run(context.Background(), []string{"frobnicate"}, getenvFrom(base), io.Discard, nil); err == nil {
		t.Error("unknown command: got nil, want an error")
	}
	var help strings.Builder
	if err := run(context.Background(), []string{"help"}, getenvFrom(base), &help, nil); err != nil || !strings.Contains(help.String(), "dlq redrive") {
		t.Errorf("help: got %v and %q, want the usage with every command", err, help.String())
	}
}

func TestShutdownTimeoutMustCoverTheLongPoll(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x", "LEDGER_QUEUE_URL": "http://q", "LEDGER_DLQ_URL": "http://d"}
	tests := []struct {
		wait, shutdown string
		ok             bool
	}{
		{"", "", true},       // the defaults: 10s + 5s
		{"20s", "25s", true}, // the longest wait
		{"", "14s", false},   // no room for the batch after the default wait
		{"20s", "", false},   // the default timeout cannot cover the longest wait
		{"1s", "5s", false},  // no room for a batch at all
		{"1s", "6s", true},
	}
	for _, tt := range tests {
		vars := map[string]string{"LEDGER_WAIT_TIME": tt.wait, "SHUTDOWN_TIMEOUT": tt.shutdown}
		for k, v := range base {
			vars[k] = v
		}
		_, err := loadConfig(getenvFrom(vars), true)
		switch {
		case tt.ok && err != nil:
			t.Errorf("LEDGER_WAIT_TIME=%q SHUTDOWN_TIMEOUT=%q: got %v, want it accepted", tt.wait, tt.shutdown, err)
		case !tt.ok && (err == nil || !strings.Contains(err.Error(), "SHUTDOWN_TIMEOUT") || !strings.Contains(err.Error(), "LEDGER_WAIT_TIME")):
			t.Errorf("LEDGER_WAIT_TIME=%q SHUTDOWN_TIMEOUT=%q: got %v, want an error naming both variables", tt.wait, tt.shutdown, err)
		}
	}
	// Commands that never consume (migrate, reconcile) do not care.
	vars := map[string]string{"DATABASE_URL": "postgres://x", "SHUTDOWN_TIMEOUT": "1s"}
	if _, err := loadConfig(getenvFrom(vars), false); err != nil {
		t.Errorf("migrate with SHUTDOWN_TIMEOUT=1s: got %v, want nil", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	cfg, err := loadConfig(getenvFrom(map[string]string{"DATABASE_URL": "postgres://h/db?sslmode=disable", "LEDGER_QUEUE_URL": "q", "LEDGER_DLQ_URL": "d"}), true)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPAddr != "127.0.0.1:8081" || cfg.Workers != 4 || cfg.WaitTime != 10*time.Second || cfg.ShutdownTimeout != 15*time.Second ||
		cfg.InboxRetention != 360*time.Hour || cfg.AWSRegion != "us-east-1" || !cfg.MigrateOnStart ||
		cfg.InboxMode != inbox.Sync || cfg.InboxWorkers != 2 {
		t.Errorf("defaults: got %+v", cfg)
	}
	if h := cfg.handler(nil); h.MaxAmount != 999_999_999_999 {
		t.Errorf("the handler's max amount: got %d, want 999999999999", h.MaxAmount)
	}
	if got := cfg.poolSize(); got != 10 {
		t.Errorf("pool size: got %d, want 10 (4 workers + 2 inbox workers + 4)", got)
	}
}

// TestServeConsumesAndAnswers runs the whole service in each inbox mode: an
// event published on the topic reaches the balance the API answers, and the
// metrics say which path it took.
func TestServeConsumesAndAnswers(t *testing.T) {
	t.Parallel()
	for mode, want := range map[string][]string{
		"sync":  {`ledger_messages_processed_total{outcome="applied"} 1`},
		"async": {`ledger_messages_processed_total{outcome="recorded"} 1`, `inbox_processed_total{outcome="applied"} 1`},
	} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testServe(t, mode, want)
		})
	}
}

func testServe(t *testing.T, mode string, wantMetrics []string) {
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{})
	env := map[string]string{
		"DATABASE_URL":      pgtest.NewDatabase(t),
		"HTTP_ADDR":         "127.0.0.1:0",
		"OPS_ADDR":          "127.0.0.1:0",
		"LEDGER_API_TOKENS": operatorToken,
		"AWS_ENDPOINT_URL":  awstest.Endpoint(t),
		"AWS_REGION":        tq.Config.Region,
		"LEDGER_QUEUE_URL":  tq.QueueURL,
		"LEDGER_DLQ_URL":    tq.DLQURL,
		"LEDGER_WORKERS":    "2",
		"LEDGER_WAIT_TIME":  "1s", // a stop waits for the long polls in flight
		"LOG_LEVEL":         "debug",
		"LEDGER_INBOX_MODE": mode,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listening := make(chan addrs, 1)
	done := make(chan error, 1)
	logs := &logtest.Buffer{}
	go func() { done <- run(ctx, nil, getenvFrom(env), logs, listening) }()
	var addr addrs
	select {
	case addr = <-listening:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, logs)
	case <-time.After(time.Minute):
		t.Fatal("the server did not start")
	}
	base := "http://" + addr.API
	// Every exchange is checked against the API's document, and carries the
	// operator token.
	client := &http.Client{Transport: bearer(operatorToken, apitest.New(t, apidoc.Ledger()).Transport(t, nil))}

	paymentID, merchant := uuid.NewString(), "mer_"+uuid.NewString()[:8]
	body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":%q,"amount":1050,"currency":"BRL","payer_id":"cus_1","merchant_id":%q}}`,
		uuid.NewString(), paymentID, time.Now().UTC().Format(time.RFC3339Nano), paymentID, merchant)
	if _, err := tq.SNS.Publish(context.Background(), &sns.PublishInput{TopicArn: aws.String(tq.TopicARN), Message: aws.String(body),
		MessageAttributes: awstest.SNSAttributes(testKey.Sign([]byte(body)))}); err != nil {
		t.Fatal(err)
	}

	var balance struct {
		Balances []struct {
			Currency string `json:"currency"`
			Posted   int64  `json:"posted"`
		} `json:"balances"`
	}
	deadline := time.Now().Add(time.Minute)
	for {
		res, err := client.Get(base + "/accounts/merchant:" + merchant + "/balance")
		if err != nil {
			t.Fatal(err)
		}
		ok := res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(&balance) == nil
		res.Body.Close()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the balance never appeared; logs:\n%s", logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(balance.Balances) != 1 || balance.Balances[0].Posted != 1050 || balance.Balances[0].Currency != "BRL" {
		t.Errorf("balance: got %+v, want 1050 BRL", balance)
	}
	ops := apitest.New(t, apidoc.Ops()).Client(t)
	checks := map[string][]string{
		base + "/payments/" + paymentID + "/entries": {`"amount":-1050`},
		"http://" + addr.Ops + "/metrics":            wantMetrics,
		"http://" + addr.Ops + "/readyz":             {`ready`},
	}
	for url, wants := range checks {
		c := client
		if !strings.HasPrefix(url, base) {
			c = ops
		}
		// The consumer counts a message after its commit, which the balance
		// read above may see first: poll until every want is there.
		var (
			b   []byte
			res *http.Response
		)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			var err error
			if res, err = c.Get(url); err != nil {
				t.Fatal(err)
			}
			b, _ = io.ReadAll(res.Body)
			res.Body.Close()
			all := res.StatusCode == 200
			for _, want := range wants {
				all = all && strings.Contains(string(b), want)
			}
			if all || time.Now().After(deadline) {
				break
			}
		}
		for _, want := range wants {
			if res.StatusCode != 200 || !strings.Contains(string(b), want) {
				t.Errorf("GET %s: got %d %s, want 200 containing %s", url, res.StatusCode, b, want)
			}
		}
	}
	// The public port has no operational endpoints, and the read API
	// refuses a request without the token.
	anonymous := apitest.New(t, apidoc.Ledger()).Client(t)
	for path, want := range map[string]int{"/metrics": 404, "/readyz": 404, "/accounts/merchant:" + merchant + "/balance": 401} {
		res, err := anonymous.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("GET %s on the public port without a token: %d, want %d", path, res.StatusCode, want)
		}
	}

	cancel() // SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after shutdown: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("run did not return after cancellation")
	}
	if strings.Contains(logs.String(), operatorToken) {
		t.Error("the operator token is in the logs")
	}
}

// operatorToken is the read API's token in these tests.
const operatorToken = "test-operator-token-0123456789abcdef"

// bearer sends every request with Authorization: Bearer token.
func bearer(token string, next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+token)
		return next.RoundTrip(r)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestServeRefusesAShortInboxRetention: the processed rows' retention and the
// unhandled rows' window must each outlive the queue's redelivery window.
func TestServeRefusesAShortInboxRetention(t *testing.T) {
	t.Parallel()
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{})
	for _, key := range []string{"INBOX_RETENTION", "INBOX_UNHANDLED_RETENTION"} {
		env := map[string]string{
			"DATABASE_URL":     pgtest.NewDatabase(t),
			"HTTP_ADDR":        "127.0.0.1:0",
			"AWS_ENDPOINT_URL": awstest.Endpoint(t),
			"AWS_REGION":       tq.Config.Region,
			"LEDGER_QUEUE_URL": tq.QueueURL,
			"LEDGER_DLQ_URL":   tq.DLQURL,
			key:                "1h",
		}
		// Were the window accepted, serve would run: stop it once it
		// listens, so the test fails rather than hangs.
		ctx, cancel := context.WithCancel(context.Background())
		listening := make(chan addrs, 1)
		go func() {
			select {
			case <-listening:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := run(ctx, nil, getenvFrom(env), io.Discard, listening)
		cancel()
		if err == nil || !strings.HasPrefix(err.Error(), key+":") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s=1h: got %v, want one line naming %s", key, err, key)
		}
	}
}

func TestReconcileExitStatus(t *testing.T) {
	t.Parallel()
	ledgerURL := pgtest.NewDatabase(t)
	payments := pgtest.New(t, paymentsmigrations.FS)
	paymentsURL := payments.Config().ConnString()
	env := map[string]string{"DATABASE_URL": ledgerURL}
	ctx := context.Background()
	if err := run(ctx, []string{"migrate"}, getenvFrom(env), io.Discard, nil); err != nil {
		t.Fatalf("migrate: %v", err)
	}

	// One payment with one refund, in both databases.
	paymentID, refundID := uuid.NewString(), uuid.NewString()
	at := time.Now().Add(-time.Hour)
	if _, err := payments.Exec(ctx, `INSERT INTO payments (id, amount, amount_captured, refunded_amount, currency, status, payer_id, merchant_id, created_at, updated_at)
		VALUES ($1, 1000, 1000, 300, 'BRL', 'partially_refunded', 'cus_1', 'mer_1', $2, $2)`, paymentID, at); err != nil {
		t.Fatal(err)
	}
	if _, err := payments.Exec(ctx, `INSERT INTO refunds (id, payment_id, amount, created_at) VALUES ($1, $2, 300, $3)`, refundID, paymentID, at); err != nil {
		t.Fatal(err)
	}
	apply := func(body string) {
		t.Helper()
		if err := applyOne(ctx, ledgerURL, body); err != nil {
			t.Fatal(err)
		}
	}
	ts := at.UTC().Format(time.RFC3339Nano)
	apply(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","source":"/payments","time":%q,"dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":%q,"amount":1000,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1"}}`, uuid.NewString(), ts, paymentID))
	apply(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.refunded","source":"/payments","time":%q,"dataschema":"https://payments-outbox.example/schemas/events/payment.refunded/v1.json","data":{"payment_id":%q,"refund_id":%q,"amount":300,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1","refunded_amount":300}}`, uuid.NewString(), ts, paymentID, refundID))

	var out bytes.Buffer
	if err := run(ctx, []string{"reconcile", "--payments-database-url", paymentsURL}, getenvFrom(env), &out, nil); err != nil {
		t.Fatalf("reconcile on matching data: got %v, want nil (exit 0)\n%s", err, &out)
	}

	// Inject a divergence: a second refund the ledger never heard of.
	missing := uuid.NewString()
	if _, err := payments.Exec(ctx, `INSERT INTO refunds (id, payment_id, amount, created_at) VALUES ($1, $2, 200, $3)`, missing, paymentID, at); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	env["PAYMENTS_DATABASE_URL"] = paymentsURL // the environment works as well as the flag
	err := run(ctx, []string{"reconcile", "--grace", "1m"}, getenvFrom(env), &out, nil)
	if !errors.Is(err, errDivergence) {
		t.Fatalf("reconcile with a divergence: got %v, want errDivergence (exit 1)", err)
	}
	if !strings.Contains(out.String(), missing) {
		t.Errorf("output: got %q, want it to name refund %s", out.String(), missing)
	}
}
