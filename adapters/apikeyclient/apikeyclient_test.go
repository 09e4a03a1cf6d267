package apikeyclient_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/apikeyclient"
	"github.com/payments-outbox/payments-outbox/adapters/paymentsapi"
	"github.com/payments-outbox/payments-outbox/adapters/webhooksapi"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/access/accesstest"
	"github.com/payments-outbox/payments-outbox/application/dependency"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// clock is a settable clock for the payments Authenticator's cache.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// payments is the real payments API's handler on a real access.Authenticator
// over the in-memory key store, served by httptest, every exchange checked
// against the payments document; calls counts the requests it got.
type payments struct {
	srv   *httptest.Server
	keys  *access.Keys
	clock *clock
	calls atomic.Int64
	mer1  string
	plat  string
}

func newPayments(t *testing.T) *payments {
	t.Helper()
	store := accesstest.NewFakeStore()
	p := &payments{clock: &clock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}}
	p.keys = access.NewKeys(store, p.clock.Now)
	auth := access.NewAuthenticator(store, p.clock.Now, access.AuthenticatorConfig{})
	// No payments use case is reached: GET /api_key asks only the keys.
	h := apitest.New(t, apidoc.Payments()).Handler(t, paymentsapi.NewHandler(nil, auth, logtest.Discard(), nil, paymentsapi.Config{}))
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.calls.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	p.mer1 = p.issue(t, access.Issue{Env: access.EnvTest, MerchantID: "mer_1", Name: "shop"})
	p.plat = p.issue(t, access.Issue{Env: access.EnvTest, Platform: true, Name: "ops"})
	return p
}

func (p *payments) issue(t *testing.T, in access.Issue) string {
	t.Helper()
	key, _, err := p.keys.Issue(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func (p *payments) revoke(t *testing.T, key string) {
	t.Helper()
	k, err := access.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.keys.Revoke(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
}

func newClient(t *testing.T, base string, cfg apikeyclient.Config) *apikeyclient.Client {
	t.Helper()
	c, err := apikeyclient.New(base, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func keyID(t *testing.T, key string) string {
	t.Helper()
	k, err := access.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return k.ID
}

// TestAnswersWhomTheKeyActsAs: the principal is payments' answer, a
// merchant's or the platform's; an unknown key is ErrUnknownKey; a
// malformed one is ErrMalformedKey and is never sent.
func TestAnswersWhomTheKeyActsAs(t *testing.T) {
	t.Parallel()
	p := newPayments(t)
	c := newClient(t, p.srv.URL, apikeyclient.Config{})
	ctx := context.Background()

	got, err := c.Authenticate(ctx, p.mer1)
	if err != nil || got != access.MerchantPrincipal(keyID(t, p.mer1), "mer_1") {
		t.Errorf("merchant key: %+v, %v", got, err)
	}
	if got, err = c.Authenticate(ctx, p.plat); err != nil || got != access.PlatformPrincipal(keyID(t, p.plat)) {
		t.Errorf("platform key: %+v, %v", got, err)
	}
	unknown, _, _ := access.NewKey(access.EnvTest, false, nil)
	if _, err := c.Authenticate(ctx, unknown); !errors.Is(err, access.ErrUnknownKey) {
		t.Errorf("unknown key: err = %v, want ErrUnknownKey", err)
	}
	before := p.calls.Load()
	for _, bad := range []string{"", "letmein", "Bearer " + p.mer1, p.mer1 + "x"} {
		if _, err := c.Authenticate(ctx, bad); !errors.Is(err, access.ErrMalformedKey) {
			t.Errorf("Authenticate(%q): err = %v, want ErrMalformedKey", bad, err)
		}
	}
	if p.calls.Load() != before {
		t.Error("a malformed key was sent to the payments service")
	}
}

// TestRevocationIsPaymentsToDecide: every call asks payments (no cache of
// this client's), so a revoked key is refused exactly when payments' own
// Authenticator refuses it: within access.CacheTTL, never later.
func TestRevocationIsPaymentsToDecide(t *testing.T) {
	t.Parallel()
	p := newPayments(t)
	c := newClient(t, p.srv.URL, apikeyclient.Config{})
	ctx := context.Background()
	if _, err := c.Authenticate(ctx, p.mer1); err != nil {
		t.Fatal(err)
	}
	p.revoke(t, p.mer1)
	before := p.calls.Load()
	p.clock.Advance(access.CacheTTL - time.Millisecond)
	if _, err := c.Authenticate(ctx, p.mer1); err != nil {
		t.Errorf("within payments' TTL: %v, want payments' cached answer", err)
	}
	p.clock.Advance(time.Millisecond)
	if _, err := c.Authenticate(ctx, p.mer1); !errors.Is(err, access.ErrUnknownKey) {
		t.Errorf("at payments' TTL: err = %v, want ErrUnknownKey (revoked)", err)
	}
	if n := p.calls.Load() - before; n != 2 {
		t.Errorf("%d calls to payments for 2 verifications: the client answered from a cache of its own", n)
	}
}

// TestFailsClosed: whatever keeps payments from saying who the key is — no
// answer in time, a refused connection, a 5xx, a 429, a redirect, an answer
// it cannot read — is dependency.ErrUnavailable, never a principal, and no
// error holds the key. A caller that went away gets its own error.
func TestFailsClosed(t *testing.T) {
	t.Parallel()
	key, _, err := access.NewKey(access.EnvTest, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	answer := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if status == http.StatusFound {
				w.Header().Set("Location", "http://elsewhere.invalid/api_key")
			}
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	closed := httptest.NewServer(answer(200, ""))
	closed.Close()
	cases := map[string]struct {
		handler http.Handler
		base    string
	}{
		"no answer in time":      {handler: hang},
		"connection refused":     {base: closed.URL},
		"500":                    {handler: answer(500, `{"type":"/problems/internal"}`)},
		"503":                    {handler: answer(503, `{"type":"/problems/unavailable"}`)},
		"a redirect":             {handler: answer(http.StatusFound, "")},
		"not JSON":               {handler: answer(200, `<html>`)},
		"another object":         {handler: answer(200, `{"object":"payment","id":"k1","merchant_id":"mer_1","platform":false}`)},
		"no id":                  {handler: answer(200, `{"object":"api_key","id":"","merchant_id":"mer_1","platform":false}`)},
		"platform and merchant":  {handler: answer(200, `{"object":"api_key","id":"k1","merchant_id":"mer_1","platform":true}`)},
		"neither":                {handler: answer(200, `{"object":"api_key","id":"k1","merchant_id":null,"platform":false}`)},
		"an answer far too long": {handler: answer(200, `{"object":"api_key","id":"`+strings.Repeat("k", 8<<10)+`","merchant_id":"mer_1","platform":false}`)},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := c.base
			if c.handler != nil {
				srv := httptest.NewServer(c.handler)
				t.Cleanup(srv.Close)
				base = srv.URL
			}
			cl := newClient(t, base, apikeyclient.Config{Timeout: 200 * time.Millisecond})
			p, err := cl.Authenticate(context.Background(), key)
			if !errors.Is(err, dependency.ErrUnavailable) || p.Valid() {
				t.Fatalf("%+v, %v; want no principal and dependency.ErrUnavailable", p, err)
			}
			if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), key[len(key)-52:]) {
				t.Errorf("the error holds the key: %v", err)
			}
		})
	}

	t.Run("the caller gone", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(hang)
		t.Cleanup(srv.Close)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := newClient(t, srv.URL, apikeyclient.Config{}).Authenticate(ctx, key)
		if !errors.Is(err, context.Canceled) || errors.Is(err, dependency.ErrUnavailable) {
			t.Errorf("err = %v, want context.Canceled, not an outage", err)
		}
	})
}

// TestNewRefusesAURLItCannotSendAKeyTo: the base URL is checked at start-up.
func TestNewRefusesAURLItCannotSendAKeyTo(t *testing.T) {
	for _, bad := range []string{"", "payments:8080", "ftp://payments", "http://user:pw@payments:8080", "http://payments:8080/?x=1", "http:///api"} {
		if _, err := apikeyclient.New(bad, apikeyclient.Config{}); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
	if _, err := apikeyclient.New("http://payments:8080/", apikeyclient.Config{}); err != nil {
		t.Errorf("New(http://payments:8080/): %v", err)
	}
}

// listOnly is the webhooks service as far as this test needs it: a merchant
// with no endpoints.
type listOnly struct{ webhooksapi.Service }

func (listOnly) List(context.Context, webhooks.ListEndpoints) (webhooks.EndpointPage, error) {
	return webhooks.EndpointPage{}, nil
}

// TestTheWebhooksAPIRefusesARevokedKey: the webhooks API on this client and
// the real payments API: a key works on both, is refused by both once
// payments' Authenticator refuses it, and while payments cannot be reached
// the webhooks API answers 503, never lets the key through.
func TestTheWebhooksAPIRefusesARevokedKey(t *testing.T) {
	t.Parallel()
	p := newPayments(t)
	c := newClient(t, p.srv.URL, apikeyclient.Config{})
	hooks := httptest.NewServer(apitest.New(t, apidoc.Webhooks()).Handler(t,
		webhooksapi.NewHandler(listOnly{}, c, logtest.Discard(), nil, webhooksapi.Config{})))
	t.Cleanup(hooks.Close)
	get := func(base, path string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+p.mer1)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if w, k := get(hooks.URL, "/webhook_endpoints"), get(p.srv.URL, "/api_key"); w != 200 || k != 200 {
		t.Fatalf("a live key: webhooks %d, payments %d; want 200 from both", w, k)
	}
	p.revoke(t, p.mer1)
	p.clock.Advance(access.CacheTTL)
	if w, k := get(hooks.URL, "/webhook_endpoints"), get(p.srv.URL, "/api_key"); w != 401 || k != 401 {
		t.Errorf("a revoked key past payments' TTL: webhooks %d, payments %d; want 401 from both", w, k)
	}
	live := p.issue(t, access.Issue{Env: access.EnvTest, MerchantID: "mer_2", Name: "shop 2"})
	p.srv.Close() // payments down
	req, _ := http.NewRequest(http.MethodGet, hooks.URL+"/webhook_endpoints", nil)
	req.Header.Set("Authorization", "Bearer "+live)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Errorf("payments down: webhooks answered %d (Retry-After %q), want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
}

// TestAKeyOverItsLimitIsRateLimited: the payments service's 429 is the
// key's limit, not an outage: it fails closed as an outage does, but as
// access.ErrRateLimited, which the webhooks API answers 429, not 503.
func TestAKeyOverItsLimitIsRateLimited(t *testing.T) {
	t.Parallel()
	p := newPayments(t)
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"type":"/problems/rate-limited","title":"Too Many Requests","status":429}`)
	}))
	t.Cleanup(limited.Close)
	c, err := apikeyclient.New(limited.URL, apikeyclient.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Authenticate(context.Background(), p.mer1); got.Valid() || !errors.Is(err, access.ErrRateLimited) || errors.Is(err, dependency.ErrUnavailable) {
		t.Errorf("a 429: got %+v, %v; want no principal and access.ErrRateLimited, not an outage", got, err)
	}
}
