package paymentsapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/adapters/paymentsapi"
	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/apikeystore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/access/accesstest"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/payments/paymentstest"
	"github.com/payments-outbox/payments-outbox/domain/payment"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// validated returns h with every exchange checked against the API's OpenAPI
// document: each test of the API is also a test of its contract.
func validated(t testing.TB, h http.Handler) http.Handler {
	return apitest.New(t, apidoc.Payments()).Handler(t, h)
}

// testKeys are the API keys newServer issues: two merchants', the
// platform's, and a revoked one of mer_1's.
type testKeys struct{ mer1, mer2, platform, revoked string }

// newServer is the real router on the real service and a real Postgres. Its
// client sends the platform's key unless a request names its own
// Authorization, so the tests of other behaviour may name any merchant.
func newServer(t *testing.T) (*httptest.Server, *pgxpool.Pool) {
	srv, pool, _ := newServerWithKeys(t, logtest.Discard())
	return srv, pool
}

func newServerWithKeys(t *testing.T, log *slog.Logger) (*httptest.Server, *pgxpool.Pool, testKeys) {
	t.Helper()
	pool := pgtest.New(t, paymentsmigrations.FS)
	svc := payments.NewService(paymentstore.New(pool), time.Now,
		func() string { return uuid.Must(uuid.NewV7()).String() }, payments.Config{})
	store := apikeystore.New(pool)
	keys := issueKeys(t, store)
	h := paymentsapi.NewHandler(svc, access.NewAuthenticator(store, time.Now, access.AuthenticatorConfig{}), log, nil, paymentsapi.Config{})
	srv := httptest.NewServer(validated(t, h))
	t.Cleanup(srv.Close)
	srv.Client().Transport = withKey(keys.platform, srv.Client().Transport)
	return srv, pool, keys
}

// issueKeys issues testKeys into store.
func issueKeys(t testing.TB, store access.Store) testKeys {
	t.Helper()
	admin := access.NewKeys(store, time.Now)
	issue := func(in access.Issue) string {
		t.Helper()
		in.Env = access.EnvTest
		key, _, err := admin.Issue(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	k := testKeys{
		mer1:     issue(access.Issue{MerchantID: "mer_1", Name: "shop 1"}),
		mer2:     issue(access.Issue{MerchantID: "mer_2", Name: "shop 2"}),
		platform: issue(access.Issue{Platform: true, Name: "platform"}),
		revoked:  issue(access.Issue{MerchantID: "mer_1", Name: "old"}),
	}
	id, err := access.ParseKey(k.revoked)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Revoke(context.Background(), id.ID); err != nil {
		t.Fatal(err)
	}
	return k
}

// withKey sends Authorization: Bearer key on every request that has no
// Authorization header of its own.
func withKey(key string, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if _, ok := r.Header["Authorization"]; !ok {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+key)
		}
		return next.RoundTrip(r)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

func do(t *testing.T, srv *httptest.Server, method, path, contentType, body string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Authorization" && header[i+1] == "" {
			req.Header["Authorization"] = nil // present for withKey, sent as none
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{res.StatusCode, res.Header, b}
}

const createBody = `{"amount": 1050, "currency": "brl", "payer_id": "cus_1", "merchant_id": "mer_1", "description": "coffee"}`

func create(t *testing.T, srv *httptest.Server, header ...string) response {
	t.Helper()
	return do(t, srv, http.MethodPost, "/payments", "application/json", createBody, header...)
}

func TestCreateGetRefund(t *testing.T) {
	t.Parallel()
	srv, pool := newServer(t)

	res := create(t, srv)
	if res.status != http.StatusCreated {
		t.Fatalf("create: status %d %s", res.status, res.body)
	}
	p := res.json(t)
	id, _ := p["id"].(string)
	if res.header.Get("Location") != "/payments/"+id {
		t.Errorf("Location = %q, want /payments/%s", res.header.Get("Location"), id)
	}
	for k, want := range map[string]any{"status": "created", "amount": 1050.0, "refunded_amount": 0.0, "currency": "BRL", "payer_id": "cus_1", "merchant_id": "mer_1"} {
		if p[k] != want {
			t.Errorf("create: %s = %v, want %v", k, p[k], want)
		}
	}
	if res.header.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id on the response")
	}

	got := do(t, srv, http.MethodGet, "/payments/"+id, "", "")
	if got.status != http.StatusOK {
		t.Fatalf("get: status %d", got.status)
	}
	if g := got.json(t); g["created_at"] != p["created_at"] || g["amount"] != p["amount"] {
		t.Errorf("get = %v, want what create returned %v", g, p)
	}
	// HEAD answers as GET does, without the body; a path with no GET has
	// no HEAD either.
	head := do(t, srv, http.MethodHead, "/payments/"+id, "", "")
	if head.status != http.StatusOK || head.header.Get("Content-Type") != "application/json" || len(head.body) != 0 {
		t.Errorf("HEAD: %d %q, %d bytes; want 200 application/json without a body", head.status, head.header.Get("Content-Type"), len(head.body))
	}
	if head := do(t, srv, http.MethodHead, "/payments/"+uuid.NewString(), "", ""); head.status != http.StatusNotFound {
		t.Errorf("HEAD of an unknown payment: %d, want 404", head.status)
	}
	if head := do(t, srv, http.MethodHead, "/payments/"+id+"/refunds", "", ""); head.status != http.StatusMethodNotAllowed || head.header.Get("Allow") != "POST" {
		t.Errorf("HEAD /payments/{id}/refunds: %d Allow %q, want 405 Allow POST", head.status, head.header.Get("Allow"))
	}

	ref := do(t, srv, http.MethodPost, "/payments/"+id+"/refunds", "application/json", `{"amount": 50}`)
	if ref.status != http.StatusCreated {
		t.Fatalf("refund: status %d %s", ref.status, ref.body)
	}
	r := ref.json(t)
	refund, _ := r["refund"].(map[string]any)
	if r["status"] != "partially_refunded" || r["refunded_amount"] != 50.0 || refund == nil || refund["amount"] != 50.0 || refund["id"] == "" {
		t.Errorf("refund response = %s", ref.body)
	}
	over := do(t, srv, http.MethodPost, "/payments/"+id+"/refunds", "application/json", `{"amount": 1001}`)
	assertProblem(t, over, http.StatusConflict, "/problems/refund-exceeds-amount")

	// Exactly the matching outbox rows exist.
	var created, refunded int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE type = 'payment.created'), count(*) FILTER (WHERE type = 'payment.refunded') FROM outbox WHERE aggregate_id = $1`, id).Scan(&created, &refunded); err != nil {
		t.Fatal(err)
	}
	if created != 1 || refunded != 1 {
		t.Errorf("outbox: %d created, %d refunded; want 1 and 1", created, refunded)
	}
}

func assertProblem(t *testing.T, res response, status int, typ string) map[string]any {
	t.Helper()
	if res.status != status {
		t.Fatalf("status = %d, want %d; body %s", res.status, status, res.body)
	}
	if ct := res.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	p := res.json(t)
	if p["type"] != typ || p["status"] != float64(status) || p["title"] == "" {
		t.Errorf("problem = %s, want type %s status %d", res.body, typ, status)
	}
	return p
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	srv, pool := newServer(t)
	created := create(t, srv).json(t)
	id := created["id"].(string)
	huge := `{"amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b", "description": "` + strings.Repeat("x", paymentsapi.MaxBodyBytes) + `"}`

	tests := []struct {
		name, method, path, ct, body string
		status                       int
		typ                          string
	}{
		{"wrong content type", "POST", "/payments", "text/plain", createBody, 415, "/problems/unsupported-media-type"},
		{"no content type", "POST", "/payments", "", createBody, 415, "/problems/unsupported-media-type"},
		{"empty body", "POST", "/payments", "application/json", "", 400, "/problems/malformed-body"},
		{"malformed json", "POST", "/payments", "application/json", `{"amount":`, 400, "/problems/malformed-body"},
		{"not an object", "POST", "/payments", "application/json", `[1,2]`, 400, "/problems/malformed-body"},
		{"trailing data", "POST", "/payments", "application/json", createBody + `{}`, 400, "/problems/malformed-body"},
		{"unknown field", "POST", "/payments", "application/json", `{"amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b", "amout": 2}`, 400, "/problems/malformed-body"},
		{"wrong field type", "POST", "/payments", "application/json", `{"amount": 1, "currency": 986, "payer_id": "a", "merchant_id": "b"}`, 400, "/problems/malformed-body"},
		{"body too large", "POST", "/payments", "application/json", huge, 413, "/problems/body-too-large"},
		{"fractional amount", "POST", "/payments", "application/json", `{"amount": 10.5, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`, 422, "/problems/validation-failed"},
		{"string amount", "POST", "/payments", "application/json", `{"amount": "10", "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`, 422, "/problems/validation-failed"},
		{"overflowing amount", "POST", "/payments", "application/json", `{"amount": 9223372036854775808, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`, 422, "/problems/validation-failed"},
		{"amount over the limit", "POST", "/payments", "application/json", `{"amount": 1000000000000, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`, 422, "/problems/amount-exceeds-limit"},
		{"zero amount", "POST", "/payments", "application/json", `{"amount": 0, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`, 422, "/problems/validation-failed"},
		{"negative amount", "POST", "/payments", "application/json", `{"amount": -1, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`, 422, "/problems/validation-failed"},
		{"unknown currency", "POST", "/payments", "application/json", `{"amount": 1, "currency": "ABC", "payer_id": "a", "merchant_id": "b"}`, 422, "/problems/validation-failed"},
		{"missing fields", "POST", "/payments", "application/json", `{}`, 422, "/problems/validation-failed"},
		{"malformed id", "GET", "/payments/not-a-uuid", "", "", 404, "/problems/payment-not-found"},
		{"sql in id", "GET", "/payments/'%20OR%201=1--", "", "", 404, "/problems/payment-not-found"},
		{"unknown id", "GET", "/payments/" + uuid.NewString(), "", "", 404, "/problems/payment-not-found"},
		{"refund unknown id", "POST", "/payments/" + uuid.NewString() + "/refunds", "application/json", `{"amount": 1}`, 404, "/problems/payment-not-found"},
		{"refund malformed id", "POST", "/payments/123/refunds", "application/json", `{"amount": 1}`, 404, "/problems/payment-not-found"},
		{"refund zero", "POST", "/payments/" + id + "/refunds", "application/json", `{"amount": 0}`, 422, "/problems/validation-failed"},
		{"refund missing amount", "POST", "/payments/" + id + "/refunds", "application/json", `{}`, 422, "/problems/validation-failed"},
		{"refund unknown field", "POST", "/payments/" + id + "/refunds", "application/json", `{"amount": 1, "reason": "x"}`, 400, "/problems/malformed-body"},
		{"wrong method", "DELETE", "/payments/" + id, "", "", 405, "/problems/method-not-allowed"},
		{"unknown route", "GET", "/nope", "", "", 404, "/problems/not-found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertProblem(t, do(t, srv, tt.method, tt.path, tt.ct, tt.body), tt.status, tt.typ)
		})
	}

	t.Run("validation lists every bad field", func(t *testing.T) {
		p := assertProblem(t, do(t, srv, "POST", "/payments", "application/json", `{"amount": -1, "currency": "ZZZ", "payer_id": "", "merchant_id": "m"}`), 422, "/problems/validation-failed")
		var fields []string
		for _, e := range p["errors"].([]any) {
			fields = append(fields, e.(map[string]any)["field"].(string))
		}
		if strings.Join(fields, ",") != "amount,currency,payer_id" {
			t.Errorf("fields = %v, want amount, currency, payer_id", fields)
		}
	})

	var n int
	if err := pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM payments) + (SELECT count(*) FROM outbox)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("rows after bad requests = %d, want the first payment and its outbox row only", n)
	}
}

// TestStrictJSON: a body that could mean two things — to this API and to
// whatever else reads it (a proxy, a log, the client's own library) — is
// refused with a detail that says why, never read one way in silence: a
// field name in another case, a name given twice, invalid UTF-8, a currency
// that only upper-casing makes ISO. None leaves a row behind.
func TestStrictJSON(t *testing.T) {
	t.Parallel()
	srv, pool := newServer(t)
	id := create(t, srv).json(t)["id"].(string)
	before := rowCounts(t, pool)
	refunds := "/payments/" + id + "/refunds"

	tests := []struct {
		name, path, body string
		status           int
		typ, detail      string // detail: a word of the problem's detail, or of a field error's
	}{
		{"upper-case field", "/payments", `{"AMOUNT": 4242, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`,
			400, "/problems/malformed-body", `"AMOUNT" (field names are case-sensitive)`},
		{"a field in title case", "/payments", `{"amount": 4242, "Currency": "BRL", "payer_id": "a", "merchant_id": "b"}`,
			400, "/problems/malformed-body", `"Currency"`},
		{"duplicate field", "/payments", `{"amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b", "amount": 4242}`,
			400, "/problems/malformed-body", `the field "amount" twice`},
		{"duplicate field, same value", "/payments", `{"amount": 1, "amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`,
			400, "/problems/malformed-body", `twice`},
		{"invalid UTF-8 in a value", "/payments", "{\"amount\": 1, \"currency\": \"BRL\", \"payer_id\": \"a\xffb\", \"merchant_id\": \"b\"}",
			400, "/problems/malformed-body", `UTF-8 in "payer_id"`},
		{"invalid UTF-8 in a name", "/payments", "{\"amount\": 1, \"currency\": \"BRL\", \"payer_id\": \"a\", \"merchant_id\": \"b\", \"d\xc3\": 1}",
			400, "/problems/malformed-body", `UTF-8`},
		{"a lone surrogate escape", "/payments", `{"amount": 1, "currency": "BRL", "payer_id": "\ud800", "merchant_id": "b"}`,
			400, "/problems/malformed-body", `surrogate`},
		{"dotless i currency", "/payments", `{"amount": 1, "currency": "ıdr", "payer_id": "a", "merchant_id": "b"}`,
			422, "/problems/validation-failed", `ISO 4217`},
		{"long s currency", "/payments", `{"amount": 1, "currency": "uſd", "payer_id": "a", "merchant_id": "b"}`,
			422, "/problems/validation-failed", `ISO 4217`},
		{"null body", "/payments", `null`, 400, "/problems/malformed-body", `a JSON object`},
		{"trailing data", "/payments", createBody + ` x`, 400, "/problems/malformed-body", `exactly one JSON object`},
		{"wrong field type", "/payments", `{"amount": 1, "currency": ["BRL"], "payer_id": "a", "merchant_id": "b"}`,
			400, "/problems/malformed-body", `field "currency" must be a JSON string`},
		{"refund in upper case", refunds, `{"AMOUNT": 1}`, 400, "/problems/malformed-body", `"AMOUNT"`},
		{"refund amount twice", refunds, `{"amount": 1, "amount": 1000}`, 400, "/problems/malformed-body", `twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, srv, "POST", tt.path, "application/json", tt.body)
			p := assertProblem(t, res, tt.status, tt.typ)
			detail, _ := p["detail"].(string)
			if errs, ok := p["errors"].([]any); ok {
				for _, e := range errs {
					detail += "; " + e.(map[string]any)["detail"].(string)
				}
			}
			if !strings.Contains(detail, tt.detail) {
				t.Errorf("detail %q, want it to say %s", detail, tt.detail)
			}
		})
	}
	if after := rowCounts(t, pool); after != before {
		t.Errorf("rows (payments, refunds, outbox, keys) = %v after the refused bodies, want %v as before", after, before)
	}
}

func TestTextIsStoredVerbatim(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t)
	desc := `Robert'); DROP TABLE payments;-- ☃ "quoted" \ 支付`
	body, _ := json.Marshal(map[string]any{"amount": 1, "currency": "JPY", "payer_id": "ü'1", "merchant_id": "m;--", "description": desc})
	res := do(t, srv, "POST", "/payments", "application/json; charset=utf-8", string(body))
	if res.status != 201 {
		t.Fatalf("status %d %s", res.status, res.body)
	}
	got := do(t, srv, "GET", res.header.Get("Location"), "", "").json(t)
	if got["description"] != desc || got["payer_id"] != "ü'1" || got["merchant_id"] != "m;--" {
		t.Errorf("got %v", got)
	}
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	srv, pool := newServer(t)
	first := create(t, srv, "Idempotency-Key", "key-1")
	if first.status != 201 || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d replayed=%q", first.status, first.header.Get("Idempotent-Replayed"))
	}
	again := create(t, srv, "Idempotency-Key", "key-1")
	if again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.body, first.body) {
		t.Fatalf("retry: %d replayed=%q body\n%s\nwant\n%s", again.status, again.header.Get("Idempotent-Replayed"), again.body, first.body)
	}
	other := do(t, srv, "POST", "/payments", "application/json", `{"amount": 2, "currency": "BRL", "payer_id": "a", "merchant_id": "mer_1"}`, "Idempotency-Key", "key-1")
	assertProblem(t, other, 422, "/problems/idempotency-key-reused")
	bad := create(t, srv, "Idempotency-Key", strings.Repeat("k", 256))
	assertProblem(t, bad, 400, "/problems/invalid-idempotency-key")

	// Refunds: a retry replays the first refund's response, even after the
	// payment changed, and refunds nothing more.
	id := first.json(t)["id"].(string)
	r1 := do(t, srv, "POST", "/payments/"+id+"/refunds", "application/json", `{"amount": 100}`, "Idempotency-Key", "refund-1")
	do(t, srv, "POST", "/payments/"+id+"/refunds", "application/json", `{"amount": 200}`)
	r2 := do(t, srv, "POST", "/payments/"+id+"/refunds", "application/json", `{"amount": 100}`, "Idempotency-Key", "refund-1")
	if r1.status != 201 || r2.status != 201 || r2.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r1.body, r2.body) {
		t.Fatalf("refund replay: %d/%d body\n%s\nwant\n%s", r1.status, r2.status, r2.body, r1.body)
	}
	if got := do(t, srv, "GET", "/payments/"+id, "", "").json(t)["refunded_amount"]; got != 300.0 {
		t.Errorf("refunded_amount = %v, want 300", got)
	}

	// While a request holds the key, a twin gets 409 with Retry-After: a
	// transaction here takes the key as a request's would.
	ctx := context.Background()
	locked, release, done := make(chan error, 1), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- postgres.Transact(ctx, pool, func(tx *postgres.Tx) error {
			err := postgres.LockKey(ctx, tx, &idempotency.Key{Merchant: "mer_1", Key: "key-busy"}) // createBody's merchant
			locked <- err
			if err != nil {
				return err
			}
			<-release
			return errors.New("rolled back: the twin only held the key")
		})
	}()
	if err := <-locked; err != nil {
		close(release)
		t.Fatal(err)
	}
	busy := create(t, srv, "Idempotency-Key", "key-busy")
	close(release)
	assertProblem(t, busy, 409, "/problems/idempotency-key-in-flight")
	if busy.header.Get("Retry-After") != "1" {
		t.Errorf("409 in flight: Retry-After %q, want 1", busy.header.Get("Retry-After"))
	}
	<-done
	if res := create(t, srv, "Idempotency-Key", "key-busy"); res.status != 201 {
		t.Errorf("after the twin finished: %d", res.status)
	}
}

func TestConcurrentSameKeyCreatesOnePayment(t *testing.T) {
	t.Parallel()
	srv, pool := newServer(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	ids := map[string]bool{}
	for range 20 {
		wg.Go(func() {
			res := create(t, srv, "Idempotency-Key", "race")
			mu.Lock()
			defer mu.Unlock()
			statuses[res.status]++
			if res.status == 201 {
				ids[res.json(t)["id"].(string)] = true
			}
		})
	}
	wg.Wait()
	if statuses[201] == 0 || statuses[201]+statuses[409] != 20 {
		t.Errorf("statuses = %v, want only 201 and 409", statuses)
	}
	if len(ids) != 1 {
		t.Errorf("201 responses named %d payments, want 1", len(ids))
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM payments`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("payments rows = %d, want 1", n)
	}
}

// TestRequestsAreCounted: the API's requests are counted by route pattern
// in the metrics the ops listener serves.
func TestRequestsAreCounted(t *testing.T) {
	t.Parallel()
	repo := paymentstest.NewFakeRepository()
	store := accesstest.NewFakeStore()
	keys := issueKeys(t, store)
	reg := prometheus.NewRegistry()
	m := httpserver.NewMetrics(reg)
	h := paymentsapi.NewHandler(payments.NewService(repo, time.Now, func() string { return uuid.Must(uuid.NewV7()).String() }, payments.Config{}), access.NewAuthenticator(store, time.Now, access.AuthenticatorConfig{}), logtest.Discard(), m, paymentsapi.Config{})
	srv := httptest.NewServer(validated(t, h))
	t.Cleanup(srv.Close)
	srv.Client().Transport = withKey(keys.mer1, nil)
	create(t, srv)
	ops := httptest.NewServer(apitest.New(t, apidoc.Ops()).Handler(t, httpserver.NewOpsRouter(nil, logtest.Discard(), m, httpserver.OpsConfig{Gatherer: reg})))
	t.Cleanup(ops.Close)
	res := do(t, ops, "GET", "/metrics", "", "")
	if res.status != 200 || !strings.Contains(string(res.body), `http_requests_total{code="201",method="POST",route="/payments"} 1`) {
		t.Errorf("metrics: %d\n%s", res.status, res.body)
	}
}

// TestRoutesAreDocumented: the router serves exactly the operations of the
// OpenAPI document, no more (undocumented) and no fewer (documented in vain).
func TestRoutesAreDocumented(t *testing.T) {
	h := paymentsapi.NewHandler(nil, nil, logtest.Discard(), nil, paymentsapi.Config{})
	apitest.New(t, apidoc.Payments()).CheckRoutes(t, h.(chi.Routes))
}

// TestServesItsOpenAPIDocument: GET /openapi.yaml is the document in api/,
// the one every test here validates against.
func TestServesItsOpenAPIDocument(t *testing.T) {
	h := paymentsapi.NewHandler(nil, nil, logtest.Discard(), nil, paymentsapi.Config{})
	srv := httptest.NewServer(validated(t, h))
	t.Cleanup(srv.Close)
	res := do(t, srv, http.MethodGet, "/openapi.yaml", "", "")
	if res.status != http.StatusOK || res.header.Get("Content-Type") != "application/yaml" || !bytes.Equal(res.body, apidoc.Payments()) {
		t.Errorf("GET /openapi.yaml: %d %q, %d bytes; want 200 application/yaml with api/%s", res.status, res.header.Get("Content-Type"), len(res.body), apidoc.PaymentsFile)
	}
}

// failingService fails every use case with an error the API does not know.
type failingService struct{}

var errUnexpected = errors.New("constraint secret-host violated")

func (failingService) Create(context.Context, payments.CreatePayment) (payments.Committed, error) {
	return payments.Committed{}, errUnexpected
}

func (failingService) Get(context.Context, access.Principal, payment.ID) (*payment.Payment, error) {
	return nil, errUnexpected
}

func (failingService) Refund(context.Context, payments.RefundPayment) (payments.Committed, error) {
	return payments.Committed{}, errUnexpected
}

func (failingService) Capture(context.Context, payments.CapturePayment) (payments.Committed, error) {
	return payments.Committed{}, errUnexpected
}

func (failingService) Cancel(context.Context, payments.CancelPayment) (payments.Committed, error) {
	return payments.Committed{}, errUnexpected
}

// TestAFailureIsLoggedUnderItsRequestID: a 500's cause is logged once, with
// the id its answer's X-Request-Id gave the client, as the document says.
func TestAFailureIsLoggedUnderItsRequestID(t *testing.T) {
	t.Parallel()
	store := accesstest.NewFakeStore()
	keys := issueKeys(t, store)
	var logs bytes.Buffer
	h := paymentsapi.NewHandler(failingService{}, access.NewAuthenticator(store, time.Now, access.AuthenticatorConfig{}), slog.New(slog.NewJSONHandler(&logs, nil)), nil, paymentsapi.Config{})
	srv := httptest.NewServer(validated(t, h))
	t.Cleanup(srv.Close)
	srv.Client().Transport = withKey(keys.mer1, nil)
	res := do(t, srv, http.MethodGet, "/payments/"+uuid.NewString(), "", "", httpserver.RequestIDHeader, "req-500")
	assertProblem(t, res, http.StatusInternalServerError, "/problems/internal")
	if got := res.header.Get(httpserver.RequestIDHeader); got != "req-500" {
		t.Errorf("X-Request-Id %q, want the client's req-500", got)
	}
	var failed []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, `"msg":"request failed"`) {
			failed = append(failed, line)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], `"request_id":"req-500"`) || !strings.Contains(failed[0], "secret-host") {
		t.Errorf("the failure's lines %q, want one with request_id req-500 and the cause", failed)
	}
}
