package main

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// envOf is a getenv of kv. The signing key's variables, which every
// serving payments needs and no test here is about, default to testKey's
// (signingEnv); a test sets one, even to "", to say otherwise.
func envOf(kv map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := kv[k]; ok {
			return v
		}
		return signingEnv[k]
	}
}

func TestLoadConfigNamesTheBadVariable(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x", "PAYMENTS_TOPIC_ARN": "arn:aws:sns:us-east-1:000000000000:t"}
	tests := []struct {
		name, key, value, want string
	}{
		{"missing database", "DATABASE_URL", "", "DATABASE_URL"},
		{"missing topic", "PAYMENTS_TOPIC_ARN", "", "PAYMENTS_TOPIC_ARN"},
		{"bad poll interval", "OUTBOX_POLL_INTERVAL", "soon", "OUTBOX_POLL_INTERVAL"},
		{"negative retention", "OUTBOX_RETENTION", "-1h", "OUTBOX_RETENTION"},
		{"zero batch", "OUTBOX_BATCH_SIZE", "0", "OUTBOX_BATCH_SIZE"},
		{"bad attempts", "OUTBOX_MAX_ATTEMPTS", "ten", "OUTBOX_MAX_ATTEMPTS"},
		{"bad notify", "OUTBOX_NOTIFY", "maybe", "OUTBOX_NOTIFY"},
		{"bad migrate", "MIGRATE_ON_START", "yes please", "MIGRATE_ON_START"},
		{"bad level", "LOG_LEVEL", "loud", "LOG_LEVEL"},
		{"bad rate limit", "API_RATE_LIMIT", "lots", "API_RATE_LIMIT"},
		{"negative rate limit", "API_RATE_LIMIT", "-1", "API_RATE_LIMIT"},
		{"ops on the public port", "OPS_ADDR", "127.0.0.1:8080", "OPS_ADDR"},
		{"bad ordering", "OUTBOX_ORDERING", "fifo", "OUTBOX_ORDERING"},
		{"short lease", "OUTBOX_LEASE_DURATION", "100ms", "OUTBOX_LEASE_DURATION"},
		{"no active claims", "OUTBOX_ACTIVE_CLAIMS", "0", "OUTBOX_ACTIVE_CLAIMS"},
		{"zero authorization ttl", "PAYMENTS_AUTHORIZATION_TTL", "0s", "PAYMENTS_AUTHORIZATION_TTL"},
		{"bad authorization ttl", "PAYMENTS_AUTHORIZATION_TTL", "a week", "PAYMENTS_AUTHORIZATION_TTL"},
		{"zero expiry interval", "PAYMENTS_AUTHORIZATION_EXPIRY_INTERVAL", "0s", "PAYMENTS_AUTHORIZATION_EXPIRY_INTERVAL"},
		{"zero max amount", "PAYMENTS_MAX_AMOUNT", "0", "PAYMENTS_MAX_AMOUNT"},
		{"max amount past int64", "PAYMENTS_MAX_AMOUNT", "9223372036854775808", "PAYMENTS_MAX_AMOUNT"},
		{"no signing key id", "PAYMENTS_SIGNING_KEY_ID", "", "PAYMENTS_SIGNING_KEY_ID"},
		{"no signing key", "PAYMENTS_SIGNING_KEY", "", "PAYMENTS_SIGNING_KEY"},
		{"a signing key of 31 bytes", "PAYMENTS_SIGNING_KEY", base64.StdEncoding.EncodeToString(make([]byte, 31)), "PAYMENTS_SIGNING_KEY"},
		{"a key id with a comma", "PAYMENTS_SIGNING_KEY_ID", "a,b", "PAYMENTS_SIGNING_KEY_ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv := map[string]string{}
			for k, v := range base {
				kv[k] = v
			}
			kv[tt.key] = tt.value
			_, err := loadConfig(envOf(kv), true)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %s", err, tt.want)
			}
		})
	}
	cfg, err := loadConfig(envOf(base), true)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPAddr != "127.0.0.1:8080" || cfg.OpsAddr != "127.0.0.1:9090" || cfg.APIRateLimit != 100 || cfg.OutboxBatchSize != 100 || cfg.OutboxPollInterval != time.Second ||
		cfg.OutboxMaxAttempts != 10 || !cfg.OutboxNotify || cfg.OutboxRetention != 168*time.Hour || !cfg.MigrateOnStart || cfg.AWSRegion != "us-east-1" {
		t.Errorf("defaults = %+v", cfg)
	}
	if cfg.AuthorizationTTL != 168*time.Hour || cfg.AuthorizationExpiryInterval != time.Minute {
		t.Errorf("authorizations: ttl %v, expiry every %v; want 168h, 1m", cfg.AuthorizationTTL, cfg.AuthorizationExpiryInterval)
	}
	if cfg.MaxAmount != 999_999_999_999 {
		t.Errorf("max amount %d, want 999999999999", cfg.MaxAmount)
	}
	if cfg.OutboxOrdered || cfg.OutboxLeaseDuration != 15*time.Second {
		t.Errorf("standard topic: ordered %v, lease %v; want unordered, 15s", cfg.OutboxOrdered, cfg.OutboxLeaseDuration)
	}
}

// TestFIFOTopicIsOrderedByDefault: a FIFO topic asks for order, so the relay
// keeps each payment's order unless told otherwise, and refuses to be told
// to drop it.
func TestFIFOTopicIsOrderedByDefault(t *testing.T) {
	fifo := map[string]string{"DATABASE_URL": "postgres://x", "PAYMENTS_TOPIC_ARN": "arn:aws:sns:us-east-1:000000000000:t.fifo"}
	cfg, err := loadConfig(envOf(fifo), true)
	if err != nil || !cfg.OutboxOrdered {
		t.Errorf("FIFO topic: ordered %v, err %v; want ordered", cfg.OutboxOrdered, err)
	}
	fifo["OUTBOX_ORDERING"] = "none"
	if _, err := loadConfig(envOf(fifo), true); err == nil || !strings.Contains(err.Error(), "OUTBOX_ORDERING") {
		t.Errorf("OUTBOX_ORDERING=none with a FIFO topic: err %v, want one naming OUTBOX_ORDERING", err)
	}
	standard := map[string]string{"DATABASE_URL": "postgres://x", "PAYMENTS_TOPIC_ARN": "arn:aws:sns:us-east-1:000000000000:t", "OUTBOX_ORDERING": "partition"}
	if cfg, err := loadConfig(envOf(standard), true); err != nil || !cfg.OutboxOrdered {
		t.Errorf("OUTBOX_ORDERING=partition on a standard topic: ordered %v, err %v; want ordered", cfg.OutboxOrdered, err)
	}
}

// The real program: migrate on start, serve, answer, shut down cleanly when
// its context is cancelled (what SIGTERM does).
func TestServeAndShutDown(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	env := map[string]string{
		"DATABASE_URL":         dbURL,
		"HTTP_ADDR":            "127.0.0.1:0",
		"OPS_ADDR":             "127.0.0.1:0",
		"PAYMENTS_TOPIC_ARN":   "arn:aws:sns:us-east-1:000000000000:unused",
		"AWS_ENDPOINT_URL":     "http://127.0.0.1:1", // nothing listens: publishing just fails and retries
		"OUTBOX_POLL_INTERVAL": "1h",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listening := make(chan addrs, 1)
	done := make(chan error, 1)
	logs := &logtest.Buffer{}
	go func() { done <- run(ctx, nil, envOf(env), logs, listening) }()
	var addr addrs
	select {
	case addr = <-listening:
	case err := <-done:
		t.Fatalf("run exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not serving after 30s")
	}
	key := createKey(t, dbURL, "--merchant", "mer_1", "--name", "test")
	client := apitest.New(t, apidoc.Payments()).Client(t) // every exchange checked against the API's document
	post := func(key string) int {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr.API+"/payments",
			strings.NewReader(`{"amount": 1050, "currency": "BRL", "payer_id": "cus_1"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if status := post(""); status != http.StatusUnauthorized {
		t.Errorf("create without a key: status %d, want 401", status)
	}
	if status := post(key); status != http.StatusCreated {
		t.Fatalf("create: status %d", status)
	}
	// The broker is unreachable, so the event waits in the outbox, counted.
	var stats strings.Builder
	if err := run(ctx, []string{"outbox", "stats"}, envOf(map[string]string{"DATABASE_URL": dbURL}), &stats, nil); err != nil {
		t.Fatalf("outbox stats: %v", err)
	}
	if !regexp.MustCompile(`(?m)^pending\s+1$`).MatchString(stats.String()) {
		t.Errorf("outbox stats =\n%s\nwant pending 1", stats.String())
	}
	// /readyz reports the broker it could not reach, and stays ready: the
	// outbox holds the events until the broker answers.
	if status, body := get(t, "http://"+addr.Ops+"/readyz"); status != http.StatusOK || !strings.Contains(body, `"sns_topic":"unreachable"`) {
		t.Errorf("/readyz = %d %s, want 200 reporting sns_topic unreachable", status, body)
	}
	// The operational endpoints are on OPS_ADDR only.
	for _, path := range []string{"/metrics", "/readyz", "/healthz"} {
		res, err := client.Get("http://" + addr.API + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s on the public port: %d, want 404", path, res.StatusCode)
		}
	}
	// A revoked key is refused once the replica's cache forgets it.
	id := keyID(t, key)
	var out strings.Builder
	if err := run(ctx, []string{"apikey", "revoke", "--id", id}, envOf(map[string]string{"DATABASE_URL": dbURL}), &out, nil); err != nil {
		t.Fatalf("apikey revoke: %v", err)
	}
	deadline := time.Now().Add(access.CacheTTL + 5*time.Second)
	for post(key) != http.StatusUnauthorized {
		if time.Now().After(deadline) {
			t.Fatalf("a revoked key still works %s after the revocation, want at most %s", access.CacheTTL+5*time.Second, access.CacheTTL)
		}
		time.Sleep(200 * time.Millisecond)
	}
	hc := map[string]string{"OPS_ADDR": addr.Ops}
	if err := run(ctx, []string{"healthcheck"}, envOf(hc), io.Discard, nil); err != nil {
		t.Errorf("healthcheck against a ready server: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return within 30s of shutdown")
	}
	if strings.Contains(logs.String(), key) || strings.Contains(logs.String(), key[len(key)-52:]) {
		t.Error("the API key is in the logs")
	}
	var list strings.Builder
	if err := run(context.Background(), []string{"apikey", "list"}, envOf(map[string]string{"DATABASE_URL": dbURL}), &list, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(list.String(), id) || strings.Contains(list.String(), key) {
		t.Errorf("apikey list =\n%s\nwant the key's id, never the key", list.String())
	}
}

// createKey runs `payments apikey create` with args and returns the key it
// printed.
func createKey(t *testing.T, dbURL string, args ...string) string {
	t.Helper()
	var out strings.Builder
	if err := run(context.Background(), append([]string{"apikey", "create"}, args...), envOf(map[string]string{"DATABASE_URL": dbURL}), &out, nil); err != nil {
		t.Fatalf("apikey create: %v", err)
	}
	key, _, _ := strings.Cut(out.String(), "\n")
	if _, err := access.ParseKey(key); err != nil {
		t.Fatalf("apikey create printed %q first, not a key", out.String())
	}
	return key
}

func keyID(t *testing.T, key string) string {
	t.Helper()
	k, err := access.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return k.ID
}

func TestMigrateCommand(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	if err := run(context.Background(), []string{"migrate"}, envOf(map[string]string{"DATABASE_URL": dbURL}), io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	// Idempotent: a second replica migrating finds nothing to do.
	if err := run(context.Background(), []string{"migrate"}, envOf(map[string]string{"DATABASE_URL": dbURL}), io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"frobnicate"}, envOf(nil), io.Discard, nil); err == nil {
		t.Error("unknown command accepted")
	}
	var help strings.Builder
	if err := run(context.Background(), []string{"-h"}, envOf(nil), &help, nil); err != nil || !strings.Contains(help.String(), "outbox requeue") {
		t.Errorf("-h: got %v and %q, want the usage with every command", err, help.String())
	}
}

// get fetches url on the ops listener, the exchange checked against its
// document.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := apitest.New(t, apidoc.Ops()).Client(t).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// TestStartChecksTheTopic: payments refuses to start when SNS says its topic
// does not exist, naming the variable and the topic, instead of serving while
// every event retries towards DEAD; with the topic there it serves and
// /readyz reports the topic ok.
func TestStartChecksTheTopic(t *testing.T) {
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{})
	env := map[string]string{
		"DATABASE_URL":          pgtest.NewDatabase(t),
		"HTTP_ADDR":             "127.0.0.1:0",
		"OPS_ADDR":              "127.0.0.1:0",
		"AWS_ENDPOINT_URL":      awstest.Endpoint(t),
		"AWS_ACCESS_KEY_ID":     "test",
		"AWS_SECRET_ACCESS_KEY": "test",
		"AWS_REGION":            tq.Config.Region,
	}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if v, ok := signingEnv[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	missing := tq.TopicARN + "-missing"
	env["PAYMENTS_TOPIC_ARN"] = missing
	listening := make(chan addrs, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, getenv, io.Discard, listening) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "PAYMENTS_TOPIC_ARN") || !strings.Contains(err.Error(), missing) ||
			!strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("start with a missing topic: err = %v, want one naming PAYMENTS_TOPIC_ARN, %s and saying it does not exist", err, missing)
		}
	case <-listening:
		cancel()
		t.Fatalf("payments served with a missing topic (run returned %v after cancel)", <-done)
	case <-time.After(30 * time.Second):
		t.Fatal("no answer 30s after starting with a missing topic")
	}

	env["PAYMENTS_TOPIC_ARN"] = tq.TopicARN
	go func() { done <- run(ctx, nil, getenv, io.Discard, listening) }()
	select {
	case addr := <-listening:
		if status, body := get(t, "http://"+addr.Ops+"/readyz"); status != http.StatusOK || !strings.Contains(body, `"sns_topic":"ok"`) {
			t.Errorf("/readyz = %d %s, want 200 reporting sns_topic ok", status, body)
		}
	case err := <-done:
		t.Fatalf("run exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not serving after 30s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run after shutdown: %v", err)
	}
}

// TestServiceExpiresAuthorizations: the running service cancels, as
// expired, an authorization not captured before its capture_before, through
// the outbox.
func TestServiceExpiresAuthorizations(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	env := map[string]string{
		"DATABASE_URL":                           dbURL,
		"HTTP_ADDR":                              "127.0.0.1:0",
		"OPS_ADDR":                               "127.0.0.1:0",
		"PAYMENTS_TOPIC_ARN":                     "arn:aws:sns:us-east-1:000000000000:unused",
		"AWS_ENDPOINT_URL":                       "http://127.0.0.1:1",
		"OUTBOX_POLL_INTERVAL":                   "1h",
		"PAYMENTS_AUTHORIZATION_TTL":             "1ms",
		"PAYMENTS_AUTHORIZATION_EXPIRY_INTERVAL": "20ms",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listening := make(chan addrs, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, envOf(env), io.Discard, listening) }()
	var addr addrs
	select {
	case addr = <-listening:
	case err := <-done:
		t.Fatalf("run exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not serving after 30s")
	}
	key := createKey(t, dbURL, "--merchant", "mer_1", "--name", "test")
	client := apitest.New(t, apidoc.Payments()).Client(t)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr.API+"/payments",
		strings.NewReader(`{"amount": 1050, "currency": "BRL", "payer_id": "cus_1", "capture_method": "manual"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("authorize: status %d", res.StatusCode)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var canceled, events int
		err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM payments WHERE status = 'canceled' AND cancellation_reason = 'expired'),
			(SELECT count(*) FROM outbox WHERE type = 'payment.canceled')`).Scan(&canceled, &events)
		if err != nil {
			t.Fatal(err)
		}
		if canceled == 1 && events == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %d payments canceled as expired, %d payment.canceled in the outbox; want 1 and 1", canceled, events)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return within 30s of shutdown")
	}
}
