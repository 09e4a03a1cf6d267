package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/paymentsapi"
	"github.com/payments-outbox/payments-outbox/application/access/accesstest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/google/uuid"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/webhookstore"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// TestMain stops the Postgres container pgtest may start.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// getenvFrom is a getenv of vars. PAYMENTS_PUBLIC_KEYS, which every
// consuming service needs and few tests here are about, defaults to
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

// secretsKey is the tests' WEBHOOKS_SECRETS_KEY.
var secretsKey = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

func baseEnv() map[string]string {
	return map[string]string{"DATABASE_URL": "postgres://x", "WEBHOOKS_QUEUE_URL": "http://q", "WEBHOOKS_DLQ_URL": "http://d",
		"WEBHOOKS_PAYMENTS_URL": "http://payments:8080", "WEBHOOKS_SECRETS_KEY": secretsKey}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, key, value string }{
		{"missing database", "DATABASE_URL", ""},
		{"missing queue", "WEBHOOKS_QUEUE_URL", ""},
		{"missing dlq", "WEBHOOKS_DLQ_URL", ""},
		{"missing payments", "WEBHOOKS_PAYMENTS_URL", ""},
		{"missing secrets key", "WEBHOOKS_SECRETS_KEY", ""},
		{"short secrets key", "WEBHOOKS_SECRETS_KEY", base64.StdEncoding.EncodeToString([]byte("short"))},
		{"bad schedule", "WEBHOOKS_RETRY_SCHEDULE", "5s,soon"},
		{"bad timeout", "WEBHOOKS_ATTEMPT_TIMEOUT", "-1s"},
		{"no concurrency", "WEBHOOKS_ENDPOINT_CONCURRENCY", "0"},
		{"no delivery workers", "WEBHOOKS_DELIVERY_WORKERS", "0"},
		{"bad disable", "WEBHOOKS_DISABLE_AFTER", "never"},
		{"long grace", "WEBHOOKS_SECRET_GRACE", "720h"},
		{"bad allow", "WEBHOOKS_ALLOW_PRIVATE_TARGETS", "perhaps"},
		{"no consumers", "WEBHOOKS_WORKERS", "0"},
		{"wait past SQS", "WEBHOOKS_WAIT_TIME", "25s"},
		{"no inbox workers", "WEBHOOKS_INBOX_WORKERS", "0"},
		{"empty batch", "WEBHOOKS_INBOX_BATCH_SIZE", "0"},
		{"no attempts", "WEBHOOKS_INBOX_MAX_ATTEMPTS", "0"},
		{"bad poll", "WEBHOOKS_INBOX_POLL_INTERVAL", "often"},
		{"bad retention", "INBOX_RETENTION", "15 days"},
		{"ops on the public port", "OPS_ADDR", "127.0.0.1:8082"},
		{"a public key that is not one", "PAYMENTS_PUBLIC_KEYS", "k1:c2hvcnQ="},
		{"unknown unsigned events policy", "PAYMENTS_UNSIGNED_EVENTS", "sometimes"},
	}
	for _, tt := range tests {
		vars := baseEnv()
		vars[tt.key] = tt.value
		err := run(context.Background(), nil, getenvFrom(vars), io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), tt.key) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line naming %s", tt.name, err, tt.key)
		}
		if err != nil && strings.Contains(err.Error(), secretsKey) {
			t.Errorf("%s: the error shows the secrets key", tt.name)
		}
	}
	cfg, err := loadConfig(getenvFrom(baseEnv()), true)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPAddr != "127.0.0.1:8082" || cfg.OpsAddr != "127.0.0.1:9092" || cfg.AttemptTimeout != 15*time.Second || cfg.EndpointConcurrency != 4 ||
		cfg.DeliveryWorkers != 16 || cfg.DisableAfter != 120*time.Hour || cfg.SecretGrace != 24*time.Hour || cfg.AllowPrivateTargets ||
		cfg.Workers != 2 || cfg.WaitTime != 10*time.Second || cfg.InboxWorkers != 2 || cfg.Schedule.Attempts() != 10 {
		t.Errorf("defaults: %+v", cfg)
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	for cmd, first := range map[string]string{
		"":            "usage: webhooks [command]",
		"serve":       "usage: webhooks [serve]",
		"migrate":     "usage: webhooks migrate",
		"healthcheck": "usage: webhooks healthcheck",
		"inbox":       "usage: webhooks inbox stats | retry --id ID | --all-parked",
		"inbox stats": "usage: webhooks inbox stats",
		"inbox retry": "usage: webhooks inbox retry --id ID [--id ID ...] | --all-parked",
	} {
		var out strings.Builder
		args := append(strings.Fields(cmd), "-h")
		if err := run(context.Background(), args, noEnv, &out, nil); err != nil || !strings.HasPrefix(out.String(), first) {
			t.Errorf("webhooks %s -h: got %v and %q, want it to start with %q", cmd, err, out.String(), first)
		}
	}
}

// receiver is a merchant's endpoint in a test: it verifies every request
// with the Standard Webhooks reference library against each of its
// secrets, and answers what answer says.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	secret []string // each secret the signature must verify with
	answer func(n int) int
}

type received struct {
	id, timestamp, body string
	signature           string  // the webhook-signature header
	verified            []error // one per secret
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	r := &receiver{answer: answer}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		got := received{id: req.Header.Get("webhook-id"), timestamp: req.Header.Get("webhook-timestamp"), body: string(body), signature: req.Header.Get("webhook-signature")}
		for _, s := range r.secret {
			wh, err := standardwebhooks.NewWebhook(s)
			if err == nil {
				err = wh.Verify(body, req.Header)
			}
			got.verified = append(got.verified, err)
		}
		r.got = append(r.got, got)
		n := len(r.got)
		r.mu.Unlock()
		w.WriteHeader(r.answer(n))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func (r *receiver) setSecrets(s ...webhooks.Secret) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = nil
	for _, x := range s {
		r.secret = append(r.secret, string(x))
	}
}

// eventually polls cond until it holds or a minute passes.
func eventually(t *testing.T, what string, logs *logtest.Buffer, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: never happened; logs:\n%s", what, logs)
		}
	}
}

// service is a webhooks service run for a test, with its database.
type service struct {
	// merchantKey is mer_a's payments API key, which the merchant API
	// verifies with the payments API served for the test.
	merchantKey string
	tq          *awstest.TopicQueue
	addr        addrs
	logs        *logtest.Buffer
	store       *webhookstore.Store
	svc         *webhooks.Service
	cancel      context.CancelFunc
	done        chan error
}

func startService(t *testing.T, allowPrivate bool) *service {
	return startServiceWith(t, allowPrivate, nil)
}

// startServiceWith is startService with extra variables in its
// environment.
func startServiceWith(t *testing.T, allowPrivate bool, extra map[string]string) *service {
	payments, merchantKey := startPaymentsKeys(t)
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{})
	dbURL := pgtest.NewDatabase(t)
	env := map[string]string{
		"DATABASE_URL": dbURL, "HTTP_ADDR": "127.0.0.1:0", "OPS_ADDR": "127.0.0.1:0",
		"AWS_ENDPOINT_URL": awstest.Endpoint(t), "AWS_REGION": tq.Config.Region,
		"WEBHOOKS_QUEUE_URL": tq.QueueURL, "WEBHOOKS_DLQ_URL": tq.DLQURL,
		"WEBHOOKS_PAYMENTS_URL": payments, "WEBHOOKS_SECRETS_KEY": secretsKey,
		"WEBHOOKS_WAIT_TIME": "1s", "WEBHOOKS_RETRY_SCHEDULE": "1s,1s,1s", "WEBHOOKS_ATTEMPT_TIMEOUT": "5s",
		"WEBHOOKS_ALLOW_PRIVATE_TARGETS": fmt.Sprint(allowPrivate), "LOG_LEVEL": "debug",
	}
	maps.Copy(env, extra)
	ctx, cancel := context.WithCancel(context.Background())
	s := &service{merchantKey: merchantKey, tq: tq, logs: &logtest.Buffer{}, cancel: cancel, done: make(chan error, 1)}
	listening := make(chan addrs, 1)
	go func() { s.done <- run(ctx, nil, getenvFrom(env), s.logs, listening) }()
	select {
	case s.addr = <-listening:
	case err := <-s.done:
		t.Fatalf("run: %v\n%s", err, s.logs)
	case <-time.After(time.Minute):
		t.Fatal("the service did not start")
	}
	t.Cleanup(func() { s.stop(t) })
	pool, err := postgres.Open(context.Background(), dbURL, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s.store = webhookstore.New(pool)
	key, _ := base64.StdEncoding.DecodeString(secretsKey)
	sealer, err := webhooks.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	// The endpoints are made through the use cases, as the merchant API
	// will make them, on the service's database.
	s.svc = webhooks.NewService(s.store, sealer, time.Now, webhooks.Config{AllowPrivateTargets: true})
	return s
}

func (s *service) stop(t *testing.T) {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("run after shutdown: %v", err)
		}
	case <-time.After(time.Minute):
		t.Error("run did not return after cancellation")
	}
}

var platform = access.PlatformPrincipal("key_platform")

// startPaymentsKeys serves the payments API's key introspection (GET
// /api_key: the real handler and Authenticator, on an in-memory key store)
// and returns its URL and a key of mer_a's.
func startPaymentsKeys(t *testing.T) (string, string) {
	t.Helper()
	store := accesstest.NewFakeStore()
	key, _, err := access.NewKeys(store, time.Now).Issue(context.Background(), access.Issue{Env: access.EnvTest, MerchantID: "mer_a", Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	auth := access.NewAuthenticator(store, time.Now, access.AuthenticatorConfig{})
	// No payments use case is reached: GET /api_key asks only the keys.
	srv := httptest.NewServer(paymentsapi.NewHandler(nil, auth, logtest.Discard(), nil, paymentsapi.Config{}))
	t.Cleanup(srv.Close)
	return srv.URL, key
}

func (s *service) endpoint(t *testing.T, merchant string, r *receiver, events ...string) webhooks.Created {
	t.Helper()
	if len(events) == 0 {
		events = []string{webhooks.AllEvents}
	}
	c, err := s.svc.Create(context.Background(), webhooks.CreateEndpoint{Principal: platform, MerchantID: merchant, URL: r.srv.URL + "/hook", EnabledEvents: events})
	if err != nil {
		t.Fatal(err)
	}
	r.setSecrets(c.Secret)
	return c
}

// publish publishes a payment.created of merchant on the payments topic,
// as the payments relay does, and returns the event's id.
func (s *service) publish(t *testing.T, merchant string) string {
	t.Helper()
	id, paymentID := uuid.NewString(), uuid.NewString()
	body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":%q,"amount":1050,"currency":"BRL","payer_id":"cus_1","merchant_id":%q}}`,
		id, paymentID, time.Now().UTC().Format(time.RFC3339Nano), paymentID, merchant)
	if _, err := s.tq.SNS.Publish(context.Background(), &sns.PublishInput{TopicArn: aws.String(s.tq.TopicARN), Message: aws.String(body),
		MessageAttributes: awstest.SNSAttributes(testKey.Sign([]byte(body)))}); err != nil {
		t.Fatal(err)
	}
	return id
}

func (s *service) metrics(t *testing.T) string {
	t.Helper()
	res, err := http.Get("http://" + s.addr.Ops + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// TestServeDeliversSignedEvents runs the whole service against real
// SNS/SQS and Postgres: a payments event published on the topic reaches
// the merchant's endpoints signed (verified by the Standard Webhooks
// reference library), with both secrets during a rotation; a receiver that
// fails first gets a retry with the same webhook-id; a 410 disables its
// endpoint; another merchant's endpoint is never sent the event.
func TestServeDeliversSignedEvents(t *testing.T) {
	t.Parallel()
	s := startService(t, true)
	ctx := context.Background()

	flaky := newReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	gone := newReceiver(t, func(int) int { return http.StatusGone })
	other := newReceiver(t, func(int) int { return http.StatusOK })
	a := s.endpoint(t, "mer_a", flaky, webhooks.AllEvents)
	g := s.endpoint(t, "mer_a", gone, "payment.created")
	o := s.endpoint(t, "mer_b", other)

	// Rotate a's secret: the old one keeps signing beside the new.
	rotated, err := s.svc.RotateSecret(ctx, webhooks.RotateSecret{Principal: platform, EndpointID: a.Endpoint.ID})
	if err != nil {
		t.Fatal(err)
	}
	flaky.setSecrets(a.Secret, rotated.Secret)

	id := s.publish(t, "mer_a")
	eventually(t, "the flaky endpoint's retry", s.logs, func() bool { return len(flaky.received()) >= 2 })
	for i, r := range flaky.received()[:2] {
		if r.id != id {
			t.Errorf("attempt %d: webhook-id %q, want the event id %s", i+1, r.id, id)
		}
		if !strings.Contains(r.body, `"merchant_id": "mer_a"`) && !strings.Contains(r.body, `"merchant_id":"mer_a"`) {
			t.Errorf("attempt %d: body %s, want the event", i+1, r.body)
		}
		for j, err := range r.verified {
			if err != nil {
				t.Errorf("attempt %d: the signature does not verify with secret %d of the rotation: %v", i+1, j+1, err)
			}
		}
	}
	eventually(t, "the 410 disabling its endpoint", s.logs, func() bool {
		e, err := s.svc.Get(ctx, platform, g.Endpoint.ID)
		return err == nil && e.Status == webhooks.Disabled
	})
	if e, _ := s.svc.Get(ctx, platform, g.Endpoint.ID); e.DisabledReason != "endpoint answered 410 Gone" {
		t.Errorf("disabled reason: %q", e.DisabledReason)
	}
	if rs := gone.received(); len(rs) != 1 || rs[0].verified[0] != nil {
		t.Errorf("the gone endpoint: %d requests (%+v), want one, signed", len(rs), rs)
	}
	// The receiver sees a request before the service records its attempt:
	// wait for the records themselves.
	var page webhooks.AttemptPage
	eventually(t, "the flaky endpoint's two attempts recorded", s.logs, func() bool {
		page, err = s.svc.Attempts(ctx, webhooks.ListAttempts{Principal: platform, EndpointID: a.Endpoint.ID})
		return err != nil || len(page.Attempts) >= 2
	})
	if err != nil || len(page.Attempts) != 2 || page.Attempts[0].Outcome != webhooks.Delivered || page.Attempts[1].Outcome != webhooks.Failed || page.Attempts[1].StatusCode != 500 {
		t.Errorf("the flaky endpoint's attempts: %+v, %v; want failed (500) then delivered", page.Attempts, err)
	}

	// Another merchant's event reaches its endpoint, and only then: the
	// first event never went there.
	otherID := s.publish(t, "mer_b")
	eventually(t, "mer_b's event", s.logs, func() bool { return len(other.received()) >= 1 })
	for _, r := range other.received() {
		if r.id != otherID {
			t.Errorf("mer_b's endpoint was sent %s, another merchant's event", r.id)
		}
	}
	eventually(t, "the metrics", s.logs, func() bool {
		m := s.metrics(t)
		return strings.Contains(m, `webhooks_attempts_total{outcome="delivered"} 2`) &&
			strings.Contains(m, `webhooks_attempts_total{outcome="failed"} 1`) &&
			strings.Contains(m, `webhooks_attempts_total{outcome="gone"} 1`) &&
			strings.Contains(m, `webhooks_endpoints_disabled_total{reason="gone"} 1`) &&
			strings.Contains(m, `inbox_processed_total{outcome="applied"} 2`)
	})

	// The merchant API, with mer_a's payments key: its endpoints, none of
	// mer_b's; without a key, 401.
	call := func(method, path, key, body string) (int, string) {
		req, err := http.NewRequest(method, "http://"+s.addr.API+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := call("GET", "/webhook_endpoints", "", ""); code != http.StatusUnauthorized {
		t.Errorf("the API without a key: %d %s, want 401", code, body)
	}
	code, body := call("GET", "/webhook_endpoints?limit=100", s.merchantKey, "")
	if code != http.StatusOK || !strings.Contains(body, a.Endpoint.ID) || strings.Contains(body, o.Endpoint.ID) || strings.Contains(body, "whsec_") {
		t.Errorf("mer_a's endpoints: %d %s; want its own, none of mer_b's, no secret", code, body)
	}
	if code, body := call("GET", "/webhook_endpoints/"+o.Endpoint.ID, s.merchantKey, ""); code != http.StatusNotFound {
		t.Errorf("mer_b's endpoint with mer_a's key: %d %s, want 404", code, body)
	}
	code, body = call("POST", "/webhook_endpoints", s.merchantKey, `{"url":"http://127.0.0.1:9/hook","enabled_events":["payment.created"]}`)
	if code != http.StatusCreated || !strings.Contains(body, `"secret":"whsec_`) || !strings.Contains(body, `"merchant_id":"mer_a"`) {
		t.Errorf("create over the API: %d %s", code, body)
	}
	s.stop(t)
	// A verifier nobody here wrote, in another language: the npm
	// standardwebhooks package (scripts/webhooks-check.sh) checks every
	// delivery the service made, with each of the two secrets it signed
	// with.
	var checked []checkedDelivery
	for _, r := range flaky.received() {
		for _, secret := range []webhooks.Secret{a.Secret, rotated.Secret} {
			checked = append(checked, checkedDelivery{Secret: string(secret), Body: r.body, Headers: map[string]string{
				"webhook-id": r.id, "webhook-timestamp": r.timestamp, "webhook-signature": r.signature}})
		}
	}
	if out, ok := runWebhooksCheck(t, checked); !ok || !strings.Contains(out, fmt.Sprintf("%d of %d deliveries verified", len(checked), len(checked))) {
		t.Errorf("the npm standardwebhooks package refused deliveries the service signed:\n%s", out)
	}
	for _, secret := range []webhooks.Secret{a.Secret, rotated.Secret} {
		if strings.Contains(s.logs.String(), string(secret)) {
			t.Error("a signing secret is in the logs")
		}
	}
}

// TestServeRefusesPrivateTargets: without WEBHOOKS_ALLOW_PRIVATE_TARGETS an
// endpoint on loopback is never sent anything; the attempt is recorded
// refused.
func TestServeRefusesPrivateTargets(t *testing.T) {
	t.Parallel()
	s := startService(t, false)
	r := newReceiver(t, func(int) int { return http.StatusOK })
	e := s.endpoint(t, "mer_a", r)
	s.publish(t, "mer_a")
	eventually(t, "a refused attempt", s.logs, func() bool {
		page, err := s.svc.Attempts(context.Background(), webhooks.ListAttempts{Principal: platform, EndpointID: e.Endpoint.ID})
		return err == nil && len(page.Attempts) > 0 && page.Attempts[0].Outcome == webhooks.Refused
	})
	if got := r.received(); len(got) != 0 {
		t.Errorf("the loopback receiver got %d requests, want none", len(got))
	}
	eventually(t, "the refused metric", s.logs, func() bool {
		return strings.Contains(s.metrics(t), `webhooks_attempts_total{outcome="refused"} 1`)
	})
}

// checkedDelivery is one line of the file scripts/webhooks-check.sh reads:
// a delivery as its receiver saw it, and the secret to verify it with.
type checkedDelivery struct {
	Secret  string            `json:"secret"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// runWebhooksCheck runs scripts/webhooks-check.sh on deliveries and reports
// its output and whether it passed; without node and npm it skips, and
// fails instead under CI.
func runWebhooksCheck(t *testing.T, deliveries []checkedDelivery) (string, bool) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI is set but %s is not installed: scripts/webhooks-check.sh cannot run", tool)
			}
			t.Logf("%s is not installed: the deliveries are not checked with the npm standardwebhooks package", tool)
			return fmt.Sprintf("%d of %d deliveries verified (not checked: no %s)", len(deliveries), len(deliveries), tool), true
		}
	}
	var b strings.Builder
	for _, d := range deliveries {
		line, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	file := filepath.Join(t.TempDir(), "deliveries.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "../../scripts/webhooks-check.sh", file).CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("webhooks-check.sh: %v", err)
	}
	return string(out), err == nil
}

// TestServeRecoversAndRefusesWhatPostgresCannotHold runs the merchant API
// on Postgres: an endpoint that was down gets its parked deliveries back
// with one recovery (paged, replayed under its Idempotency-Key); a create's
// replay answers no secret; and input Postgres cannot hold (NUL, invalid
// UTF-8), or a port out of range, is answered a 4xx problem, never a 500
// and an ERROR line.
func TestServeRecoversAndRefusesWhatPostgresCannotHold(t *testing.T) {
	t.Parallel()
	s := startService(t, true)
	ctx := context.Background()
	call := func(method, path, body string, header ...string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+s.addr.API+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.merchantKey)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(b)
	}

	// Down for the first 12 requests: three events, four attempts each
	// (WEBHOOKS_RETRY_SCHEDULE=1s,1s,1s), all parked.
	down := newReceiver(t, func(n int) int {
		if n <= 12 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	since := time.Now().UTC().Add(-time.Second)
	e := s.endpoint(t, "mer_a", down)
	var ids []string
	for range 3 {
		ids = append(ids, s.publish(t, "mer_a"))
	}
	eventually(t, "three parked deliveries", s.logs, func() bool {
		st, err := s.store.DeliveryStats(ctx, time.Now(), 1)
		return err == nil && st.Parked == 3
	})
	path := "/webhook_endpoints/" + e.Endpoint.ID + "/recover"
	req := fmt.Sprintf(`{"since": %q, "limit": 2}`, since.Format(time.RFC3339Nano))
	code, h, first := call("POST", path, req, "Idempotency-Key", "recover-1")
	var page struct {
		Queued      int    `json:"queued"`
		HasMore     bool   `json:"has_more"`
		LastEventID string `json:"last_event_id"`
	}
	if err := json.Unmarshal([]byte(first), &page); code != http.StatusAccepted || err != nil || page.Queued != 2 || !page.HasMore || h.Get("Idempotent-Replayed") != "" {
		t.Fatalf("recover: %d %s, want 2 queued and more", code, first)
	}
	if code, h, again := call("POST", path, req, "Idempotency-Key", "recover-1"); code != http.StatusAccepted || again != first || h.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the same recovery again: %d %s (replayed %q), want the first answer replayed", code, again, h.Get("Idempotent-Replayed"))
	}
	code, _, second := call("POST", path, fmt.Sprintf(`{"since": %q, "limit": 2, "starting_after": %q}`, since.Format(time.RFC3339Nano), page.LastEventID))
	if code != http.StatusAccepted || !strings.Contains(second, `"queued":1`) || !strings.Contains(second, `"has_more":false`) {
		t.Errorf("the second page: %d %s, want the last one", code, second)
	}
	// Their order is the contract suite's to check: two workers send two
	// at once here.
	eventually(t, "the three recovered deliveries delivered", s.logs, func() bool {
		delivered := map[string]bool{}
		for _, r := range down.received()[min(12, len(down.received())):] {
			delivered[r.id] = true
		}
		return len(delivered) == 3 && delivered[ids[0]] && delivered[ids[1]] && delivered[ids[2]]
	})

	// A create's replay: the endpoint, never its secret.
	body := fmt.Sprintf(`{"url": %q, "enabled_events": ["*"]}`, down.srv.URL+"/other")
	code, _, created := call("POST", "/webhook_endpoints", body, "Idempotency-Key", "create-1")
	_, _, replayed := call("POST", "/webhook_endpoints", body, "Idempotency-Key", "create-1")
	if code != http.StatusCreated || !strings.Contains(created, `"secret":"whsec_`) || strings.Contains(replayed, "whsec_") || strings.Contains(replayed, `"secret"`) {
		t.Errorf("create then its replay: %d %s, then %s; want the secret once", code, created, replayed)
	}

	// What Postgres cannot hold, and what is no port.
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/webhook_endpoints/we_%00", ""},
		{"GET", "/webhook_endpoints/%FF%FE", ""},
		{"DELETE", "/webhook_endpoints/" + e.Endpoint.ID + "%00", ""},
		{"GET", "/webhook_endpoints?starting_after=we_%00", ""},
		{"GET", "/webhook_endpoints?ending_before=%FF", ""},
		{"GET", "/webhook_endpoints?merchant_id=mer_a%00", ""},
		{"GET", "/webhook_endpoints/" + e.Endpoint.ID + "/deliveries?starting_after=wa_%00", ""},
		{"POST", "/webhook_endpoints/" + e.Endpoint.ID + "/deliveries/%00/redeliver", ""},
		{"POST", path, `{"since": "2026-01-01T00:00:00Z", "starting_after": "\u0000"}`},
		{"POST", "/webhook_endpoints", `{"url": "https://example.com/h", "enabled_events": ["*"], "description": "a\u0000b"}`},
		{"POST", "/webhook_endpoints", `{"url": "https://example.com/h", "enabled_events": ["*"], "merchant_id": "mer_a\u0000"}`},
		{"POST", "/webhook_endpoints", `{"url": "https://exa\u0000mple.com/h", "enabled_events": ["*"]}`},
		{"POST", "/webhook_endpoints", `{"url": "https://example.com:0/h", "enabled_events": ["*"]}`},
		{"POST", "/webhook_endpoints", `{"url": "https://example.com:99999/h", "enabled_events": ["*"]}`},
	} {
		code, h, body := call(c.method, c.path, c.body)
		if code < 400 || code >= 500 || !strings.HasPrefix(h.Get("Content-Type"), "application/problem+json") {
			t.Errorf("%s %s %s: %d %s, want a 4xx problem", c.method, c.path, c.body, code, body)
		}
	}
	// HTTPS:// is https: stored, and answered, as the dialler reads it.
	code, _, upper := call("POST", "/webhook_endpoints", `{"url": "HTTPS://Example.COM/h", "enabled_events": ["*"]}`)
	if code != http.StatusCreated || !strings.Contains(upper, `"url":"https://example.com/h"`) {
		t.Errorf("create with HTTPS://: %d %s, want it stored as https://example.com/h", code, upper)
	}
	if strings.Contains(s.logs.String(), `"level":"ERROR"`) {
		t.Errorf("an ERROR was logged:\n%s", s.logs)
	}
}
