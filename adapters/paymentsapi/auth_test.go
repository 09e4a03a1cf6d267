package paymentsapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/adapters/paymentsapi"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/access/accesstest"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/payments/paymentstest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// publicRoutes are the routes served without an API key, each with the
// reason. Every other route the router serves needs one.
var publicRoutes = map[string]string{
	"GET /openapi.yaml": "the contract a client generates its code from",
}

// servedRoutes lists the router's own routes as "METHOD pattern", by
// chi.Walk, so that the tests driven by it cover a new route without being
// told.
func servedRoutes(t *testing.T) []string {
	t.Helper()
	h := paymentsapi.NewHandler(nil, nil, logtest.Discard(), nil, paymentsapi.Config{})
	var routes []string
	err := chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes = append(routes, method+" "+route)
		return nil
	})
	if err != nil {
		t.Fatalf("walk the router: %v", err)
	}
	if len(routes) < 2 {
		t.Fatalf("chi.Walk found the routes %v; the test is not looking where it should", routes)
	}
	slices.Sort(routes)
	return routes
}

// TestEveryRouteNeedsAKey: every route the router serves (chi.Walk) against
// every kind of credential, with the exact status and problem type of each.
// mer_1 owns the payment; mer_2's key is another merchant's. A route added
// to the router without an entry here fails, and so does an entry for a
// route no longer served: the list of routes is the router's, not a copy.
func TestEveryRouteNeedsAKey(t *testing.T) {
	t.Parallel()
	srv, _, keys := newServerWithKeys(t, logtest.Discard())
	owned := create(t, srv, "Authorization", "Bearer "+keys.mer1).json(t)["id"].(string)
	unknown, _, err := access.NewKey(access.EnvTest, false, nil)
	if err != nil {
		t.Fatal(err)
	}

	type want struct {
		status int
		typ    string
	}
	unauthenticated := want{401, "/problems/authentication-required"}
	malformed := want{401, "/problems/malformed-credentials"}
	invalid := want{401, "/problems/invalid-credentials"}
	// How each authenticated route is exercised, by its pattern: {id} is the
	// payment mer_1 owns.
	cases := map[string]struct {
		name, body        string
		otherMerchant, ok want
	}{
		"POST /payments": {"create", createBody,
			want{422, "/problems/validation-failed"}, want{201, ""}},
		"GET /payments": {"list", "",
			want{400, "/problems/invalid-query-parameter"}, want{200, ""}},
		"GET /payments/{id}": {"get", "",
			want{404, "/problems/payment-not-found"}, want{200, ""}},
		"POST /payments/{id}/refunds": {"refund", `{"amount": 1}`,
			want{404, "/problems/payment-not-found"}, want{201, ""}},
		// The payment is automatic, so the owner's key gets as far as the
		// domain, which refuses the transition.
		"POST /payments/{id}/capture": {"capture", "",
			want{404, "/problems/payment-not-found"}, want{409, "/problems/invalid-transition"}},
		"POST /payments/{id}/cancel": {"cancel", `{"cancellation_reason": "duplicate"}`,
			want{404, "/problems/payment-not-found"}, want{409, "/problems/invalid-transition"}},
		// Every valid key reads itself (TestAPIKeyIsTheKeyPresented).
		"GET /api_key": {"api key", "", want{200, ""}, want{200, ""}},
	}
	// The query a route is sent with, if it needs one: the list names
	// mer_1, which the platform's key must and another merchant's may not.
	queries := map[string]string{"GET /payments": "?merchant_id=mer_1"}
	type route struct {
		name, method, path, body string
		otherMerchant, ok        want
	}
	var routes []route
	served := servedRoutes(t)
	for _, r := range served {
		if _, ok := publicRoutes[r]; ok {
			continue
		}
		c, ok := cases[r]
		if !ok {
			t.Errorf("the router serves %s, which this test does not exercise: add it to cases, with the answers another merchant's key and the owner's get (or to publicRoutes, with the reason it needs no key)", r)
			continue
		}
		method, pattern, _ := strings.Cut(r, " ")
		routes = append(routes, route{c.name, method, strings.ReplaceAll(pattern, "{id}", owned) + queries[r], c.body, c.otherMerchant, c.ok})
	}
	for r := range cases {
		if !slices.Contains(served, r) {
			t.Errorf("cases exercises %s, which the router does not serve", r)
		}
	}
	for r := range publicRoutes {
		if !slices.Contains(served, r) {
			t.Errorf("publicRoutes lists %s, which the router does not serve", r)
			continue
		}
		method, path, _ := strings.Cut(r, " ")
		if res := do(t, srv, method, path, "", "", "Authorization", ""); res.status == http.StatusUnauthorized {
			t.Errorf("%s without a key: 401, but publicRoutes lists it as served to anyone", r)
		}
	}
	for _, rt := range routes {
		creds := []struct {
			name, header string
			want         want
		}{
			{"no header", "", unauthenticated},
			{"basic scheme", "Basic bWVyXzE6c2VjcmV0", malformed},
			{"bearer without key", "Bearer", malformed},
			{"not a key", "Bearer letmein", malformed},
			{"key and something after it", "Bearer " + keys.mer1 + " x", malformed},
			{"two keys", "Bearer " + keys.mer1 + "," + keys.platform, malformed},
			{"key in lower-case scheme with spaces", "bearer   " + keys.mer1, rt.ok},
			{"unknown key", "Bearer " + unknown, invalid},
			{"revoked key", "Bearer " + keys.revoked, invalid},
			{"another merchant's key", "Bearer " + keys.mer2, rt.otherMerchant},
			{"the merchant's key", "Bearer " + keys.mer1, rt.ok},
			{"the platform's key", "Bearer " + keys.platform, rt.ok},
		}
		for _, c := range creds {
			t.Run(rt.name+"/"+c.name, func(t *testing.T) {
				ct := ""
				if rt.body != "" {
					ct = "application/json"
				}
				res := do(t, srv, rt.method, rt.path, ct, rt.body, "Authorization", c.header)
				if c.want.typ == "" {
					if res.status != c.want.status {
						t.Fatalf("status = %d, want %d; body %s", res.status, c.want.status, res.body)
					}
					return
				}
				assertProblem(t, res, c.want.status, c.want.typ)
				www := res.header.Get("WWW-Authenticate")
				switch {
				case c.want.status == 401 && !strings.HasPrefix(www, "Bearer"):
					t.Errorf("401 with WWW-Authenticate %q, want a Bearer challenge", www)
				case c.want.status != 401 && www != "":
					t.Errorf("%d with WWW-Authenticate %q", c.want.status, www)
				}
			})
		}
		// Two Authorization headers are never read as the first.
		for name, second := range map[string]string{"a key, then another": keys.platform, "a key twice": keys.mer1} {
			t.Run(rt.name+"/"+name, func(t *testing.T) {
				req, err := http.NewRequest(rt.method, srv.URL+rt.path, strings.NewReader(rt.body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Add("Authorization", "Bearer "+keys.mer1)
				req.Header.Add("Authorization", "Bearer "+second)
				res, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				body, _ := io.ReadAll(res.Body)
				assertProblem(t, response{res.StatusCode, res.Header, body}, 401, "/problems/malformed-credentials")
			})
		}
	}
}

// TestAPIKeyIsTheKeyPresented: GET /api_key answers whom the presented key
// acts as — the introspection the webhooks service verifies keys by — and
// never anything of its secret.
func TestAPIKeyIsTheKeyPresented(t *testing.T) {
	t.Parallel()
	srv, _, keys := newServerWithKeys(t, logtest.Discard())
	id := func(key string) string {
		k, err := access.ParseKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return k.ID
	}
	for name, c := range map[string]struct {
		key  string
		want map[string]any
	}{
		"a merchant's key": {keys.mer1, map[string]any{"object": "api_key", "id": id(keys.mer1), "merchant_id": "mer_1", "platform": false}},
		"another's":        {keys.mer2, map[string]any{"object": "api_key", "id": id(keys.mer2), "merchant_id": "mer_2", "platform": false}},
		"the platform's":   {keys.platform, map[string]any{"object": "api_key", "id": id(keys.platform), "merchant_id": nil, "platform": true}},
	} {
		res := do(t, srv, http.MethodGet, "/api_key", "", "", "Authorization", "Bearer "+c.key)
		if res.status != http.StatusOK {
			t.Fatalf("%s: %d %s", name, res.status, res.body)
		}
		if got := res.json(t); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
		if secret := c.key[strings.LastIndex(c.key, "_")+1:]; strings.Contains(string(res.body), secret) {
			t.Errorf("%s: the answer holds the key's secret: %s", name, res.body)
		}
	}
	res := do(t, srv, http.MethodGet, "/api_key", "", "", "Authorization", "Bearer "+keys.revoked)
	assertProblem(t, res, http.StatusUnauthorized, "/problems/invalid-credentials")
}

// TestMerchantScoping: a merchant's key sees and refunds its own payments
// only, creates payments to itself, and its idempotency keys are its own.
func TestMerchantScoping(t *testing.T) {
	t.Parallel()
	srv, pool, keys := newServerWithKeys(t, logtest.Discard())
	as := func(key string) []string { return []string{"Authorization", "Bearer " + key} }
	noMerchant := `{"amount": 500, "currency": "BRL", "payer_id": "cus_9"}`

	// The merchant is the key's when the body leaves it out; the platform
	// must name one.
	mine := do(t, srv, "POST", "/payments", "application/json", noMerchant, as(keys.mer1)...)
	if mine.status != 201 || mine.json(t)["merchant_id"] != "mer_1" {
		t.Fatalf("create without merchant_id as mer_1: %d %s", mine.status, mine.body)
	}
	id := mine.json(t)["id"].(string)
	p := assertProblem(t, do(t, srv, "POST", "/payments", "application/json", noMerchant, as(keys.platform)...), 422, "/problems/validation-failed")
	if !strings.Contains(string(mustJSON(t, p["errors"])), "merchant_id") {
		t.Errorf("platform without merchant_id: errors %v, want merchant_id named", p["errors"])
	}

	// Another merchant: 404 on read and refund, the same answer as for a
	// payment that does not exist, and nothing refunded.
	notFound := do(t, srv, "GET", "/payments/"+uuid.NewString(), "", "", as(keys.mer2)...)
	other := do(t, srv, "GET", "/payments/"+id, "", "", as(keys.mer2)...)
	assertProblem(t, other, 404, "/problems/payment-not-found")
	if !bytes.Equal(other.body, notFound.body) {
		t.Errorf("another merchant's payment answers %s, an unknown one %s: they must not differ", other.body, notFound.body)
	}
	assertProblem(t, do(t, srv, "POST", "/payments/"+id+"/refunds", "application/json", `{"amount": 100}`, as(keys.mer2)...), 404, "/problems/payment-not-found")
	assertProblem(t, do(t, srv, "POST", "/payments/"+id+"/refunds", "application/json", `{"amount": 100}`, append(as(keys.mer2), "Idempotency-Key", "r-1")...), 404, "/problems/payment-not-found")
	if got := do(t, srv, "GET", "/payments/"+id, "", "", as(keys.mer1)...).json(t)["refunded_amount"]; got != 0.0 {
		t.Errorf("refunded_amount = %v after another merchant's refunds, want 0", got)
	}
	// The owner and the platform may refund it, the platform's retry with
	// a key replayed in the merchant's scope.
	if res := do(t, srv, "POST", "/payments/"+id+"/refunds", "application/json", `{"amount": 100}`, append(as(keys.platform), "Idempotency-Key", "r-1")...); res.status != 201 {
		t.Fatalf("platform refund: %d %s", res.status, res.body)
	}
	again := do(t, srv, "POST", "/payments/"+id+"/refunds", "application/json", `{"amount": 100}`, append(as(keys.mer1), "Idempotency-Key", "r-1")...)
	if again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the merchant's retry of the platform's refund for it: %d replayed=%q, want the replay", again.status, again.header.Get("Idempotent-Replayed"))
	}

	// Idempotency keys per merchant: the same key, two merchants, two
	// payments; each merchant's retry replays its own.
	body := func(merchant string) string {
		return `{"amount": 700, "currency": "BRL", "payer_id": "cus_1", "merchant_id": "` + merchant + `"}`
	}
	first := do(t, srv, "POST", "/payments", "application/json", body("mer_1"), append(as(keys.mer1), "Idempotency-Key", "order-7")...)
	second := do(t, srv, "POST", "/payments", "application/json", body("mer_2"), append(as(keys.mer2), "Idempotency-Key", "order-7")...)
	if first.status != 201 || second.status != 201 || second.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("two merchants, one key: %d and %d (replayed %q), want two new payments", first.status, second.status, second.header.Get("Idempotent-Replayed"))
	}
	if first.json(t)["id"] == second.json(t)["id"] {
		t.Error("two merchants' requests with the same key made one payment")
	}
	for key, res := range map[string]response{keys.mer1: first, keys.mer2: second} {
		merchant := res.json(t)["merchant_id"].(string)
		retry := do(t, srv, "POST", "/payments", "application/json", body(merchant), append(as(key), "Idempotency-Key", "order-7")...)
		if retry.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(retry.body, res.body) {
			t.Errorf("%s's retry: %s, want its own first response %s", merchant, retry.body, res.body)
		}
	}
	var stored int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM idempotency_keys WHERE key = 'order-7'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 2 {
		t.Errorf("idempotency_keys rows for order-7 = %d, want one per merchant", stored)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newFakeAPI is the API on the in-memory repository and key store, with the
// given rate limit, metrics and logger.
func newFakeAPI(t *testing.T, rate int, reg *prometheus.Registry, log *slog.Logger) (*httptest.Server, testKeys) {
	t.Helper()
	store := accesstest.NewFakeStore()
	keys := issueKeys(t, store)
	h := paymentsapi.NewHandler(payments.NewService(paymentstest.NewFakeRepository(), time.Now, func() string { return uuid.Must(uuid.NewV7()).String() }, payments.Config{}), access.NewAuthenticator(store, time.Now, access.AuthenticatorConfig{}), log, httpserver.NewMetrics(reg), paymentsapi.Config{RateLimit: rate})
	srv := httptest.NewServer(validated(t, h))
	t.Cleanup(srv.Close)
	return srv, keys
}

// TestKeyVerificationsHaveABucketOfTheirOwn: the webhooks service verifies
// every request it is sent with GET /api_key; those verifications are
// limited per key as every request is, but in a bucket of their own, so
// that a key's webhooks traffic does not spend its payments budget.
func TestKeyVerificationsHaveABucketOfTheirOwn(t *testing.T) {
	t.Parallel()
	const limit = 3
	srv, keys := newFakeAPI(t, limit, prometheus.NewRegistry(), logtest.Discard())
	exhaust := func(path string) {
		t.Helper()
		for range 10 * limit {
			if do(t, srv, "GET", path, "", "", "Authorization", "Bearer "+keys.mer1).status == http.StatusTooManyRequests {
				return
			}
		}
		t.Fatalf("GET %s never hit the limit of %d per second", path, limit)
	}
	exhaust("/api_key")
	if res := do(t, srv, "GET", "/payments/"+uuid.NewString(), "", "", "Authorization", "Bearer "+keys.mer1); res.status != http.StatusNotFound {
		t.Errorf("a payments request right after the key's verifications ran out: %d, want 404 (its own budget untouched)", res.status)
	}
	exhaust("/payments/" + uuid.NewString())
	if res := do(t, srv, "GET", "/api_key", "", "", "Authorization", "Bearer "+keys.mer2); res.status != http.StatusOK {
		t.Errorf("another key's verification: %d, want 200", res.status)
	}
}

// TestRateLimitPerKey: past its limit a key is answered 429 with
// Retry-After and problem+json, counted; another key is not held back.
func TestRateLimitPerKey(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	const limit = 5
	srv, keys := newFakeAPI(t, limit, reg, logtest.Discard())
	path := "/payments/" + uuid.NewString() // 404: cheap, and still authenticated and counted
	var limited response
	n := 0
	for ; n < 3*limit; n++ {
		res := do(t, srv, "GET", path, "", "", "Authorization", "Bearer "+keys.mer1)
		if res.status == http.StatusTooManyRequests {
			limited = res
			break
		}
	}
	if limited.status == 0 {
		t.Fatalf("%d requests in a row never hit the limit of %d per second", n, limit)
	}
	if n < limit {
		t.Errorf("limited after %d requests, want at least %d", n, limit)
	}
	assertProblem(t, limited, 429, "/problems/rate-limited")
	if limited.header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	if res := do(t, srv, "GET", path, "", "", "Authorization", "Bearer "+keys.mer2); res.status != http.StatusNotFound {
		t.Errorf("another key right after: %d, want 404 (not limited)", res.status)
	}
	var got float64
	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() == "http_requests_rate_limited_total" {
			got = f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if got != 1 {
		t.Errorf("http_requests_rate_limited_total = %v, want 1", got)
	}
}

// TestKeysNeverReachLogsOrMetrics: the keys and their secrets appear in no
// log line, at debug level, whatever the request — accepted, refused,
// malformed, failing — nor in the metrics.
func TestKeysNeverReachLogsOrMetrics(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := prometheus.NewRegistry()
	srv, keys := newFakeAPI(t, 2, reg, log)
	unknown, _, _ := access.NewKey(access.EnvLive, true, nil)
	headers := []string{
		"Bearer " + keys.mer1, "Bearer " + keys.mer2, "Bearer " + keys.platform, "Bearer " + keys.revoked, "Bearer " + unknown,
		"Bearer " + keys.mer1 + "x", "Basic " + keys.platform, keys.mer1, "Bearer  " + keys.mer2 + " tail",
	}
	for _, h := range headers {
		for range 3 { // past the rate limit too
			do(t, srv, "POST", "/payments", "application/json", createBody, "Authorization", h)
			do(t, srv, "GET", "/payments/"+uuid.NewString(), "", "", "Authorization", h)
		}
	}
	ops := httptest.NewServer(apitest.New(t, apidoc.Ops()).Handler(t, httpserver.NewOpsRouter(nil, log, nil, httpserver.OpsConfig{Gatherer: reg})))
	t.Cleanup(ops.Close)
	metrics := do(t, ops, "GET", "/metrics", "", "")
	if logs.Len() == 0 || !strings.Contains(string(metrics.body), "http_requests_total") {
		t.Fatal("no logs or no metrics: the test would prove nothing")
	}
	for _, key := range []string{keys.mer1, keys.mer2, keys.platform, keys.revoked, unknown} {
		secret := key[strings.LastIndex(key, "_")+1:]
		for what, text := range map[string]string{"logs": logs.String(), "metrics": string(metrics.body)} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s hold the secret of %s…", what, key[:20])
			}
		}
	}
}

// TestTwoIdempotencyKeysAreRefused: a write with the header twice is
// refused before the use case, on every route that takes one: which of the
// two a proxy before the service read is anyone's guess.
func TestTwoIdempotencyKeysAreRefused(t *testing.T) {
	t.Parallel()
	srv, keys := newFakeAPI(t, 0, prometheus.NewRegistry(), logtest.Discard())
	id := uuid.NewString()
	for path, body := range map[string]string{
		"/payments":                    `{"amount": 1050, "currency": "BRL", "payer_id": "cus_1", "merchant_id": "mer_1"}`,
		"/payments/" + id + "/refunds": `{"amount": 100}`,
		"/payments/" + id + "/capture": `{}`,
		"/payments/" + id + "/cancel":  `{}`,
	} {
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+keys.mer1)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Add("Idempotency-Key", "k-1")
		req.Header.Add("Idempotency-Key", "k-2")
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		assertProblem(t, response{res.StatusCode, res.Header, b}, 400, "/problems/invalid-idempotency-key")
	}
}
