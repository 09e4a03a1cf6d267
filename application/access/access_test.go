package access_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/access/accesstest"
	"github.com/payments-outbox/payments-outbox/application/dependency"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// clock is a settable clock for the cache and last-use rules.
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

func TestPrincipalScope(t *testing.T) {
	mer, plat, none := access.MerchantPrincipal("k1", "mer_1"), access.PlatformPrincipal("k2"), access.Principal{}
	tests := []struct {
		p        access.Principal
		merchant string
		want     bool
	}{
		{mer, "mer_1", true}, {mer, "mer_2", false}, {mer, "", false},
		{plat, "mer_1", true}, {plat, "mer_2", true},
		{none, "mer_1", false}, {none, "", false},
	}
	for _, tt := range tests {
		if got := tt.p.ActsFor(tt.merchant); got != tt.want {
			t.Errorf("%+v acts for %q: got %t, want %t", tt.p, tt.merchant, got, tt.want)
		}
	}
	if none.Valid() || !mer.Valid() || !plat.Valid() {
		t.Error("only the zero Principal is invalid")
	}
}

func TestKeyForm(t *testing.T) {
	for _, platform := range []bool{false, true} {
		whole, k, err := access.NewKey(access.EnvLive, platform, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantPrefix := "pk_live_"
		if platform {
			wantPrefix += "plat_"
		}
		if !strings.HasPrefix(whole, wantPrefix) || !strings.HasPrefix(whole, k.Prefix()+"_") || len(whole) != len(k.Prefix())+1+52 {
			t.Errorf("key %s… with prefix %s: want %s<16 id chars>_<52 secret chars>", whole[:20], k.Prefix(), wantPrefix)
		}
		got, err := access.ParseKey(whole)
		if err != nil || got != k {
			t.Errorf("ParseKey(NewKey) = %+v, %v; want %+v", got, err, k)
		}
		if again, _, _ := access.NewKey(access.EnvLive, platform, nil); again == whole {
			t.Error("two keys alike")
		}
	}
	secret := strings.Repeat("a", 52)
	for _, bad := range []string{
		"", "pk_test", "pk_test_" + strings.Repeat("a", 16), "sk_test_" + strings.Repeat("a", 16) + "_" + secret,
		"pk_prod_" + strings.Repeat("a", 16) + "_" + secret, "pk_test_" + strings.Repeat("a", 15) + "_" + secret,
		"pk_test_" + strings.Repeat("a", 16) + "_" + secret + "a", "pk_test_" + strings.Repeat("A", 16) + "_" + secret,
		"pk_test_" + strings.Repeat("1", 16) + "_" + secret, "pk_test_xxxx_" + strings.Repeat("a", 16) + "_" + secret,
		"pk_test_plat_plat_" + strings.Repeat("a", 16) + "_" + secret, " pk_test_" + strings.Repeat("a", 16) + "_" + secret,
	} {
		if _, err := access.ParseKey(bad); !errors.Is(err, access.ErrMalformedKey) {
			t.Errorf("ParseKey(%q): err = %v, want ErrMalformedKey", bad, err)
		}
	}
}

func issue(t *testing.T, keys *access.Keys, in access.Issue) string {
	t.Helper()
	whole, _, err := keys.Issue(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return whole
}

func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	store := accesstest.NewFakeStore()
	clk := &clock{now: t0}
	keys := access.NewKeys(store, clk.Now)
	auth := access.NewAuthenticator(store, clk.Now, access.AuthenticatorConfig{})
	mer := issue(t, keys, access.Issue{Env: access.EnvTest, MerchantID: "mer_1", Name: "shop"})
	plat := issue(t, keys, access.Issue{Env: access.EnvTest, Platform: true, Name: "ops"})

	p, err := auth.Authenticate(ctx, mer)
	if err != nil || p.Merchant() != "mer_1" || p.IsPlatform() {
		t.Errorf("merchant key: %+v, %v", p, err)
	}
	if p, err = auth.Authenticate(ctx, plat); err != nil || !p.IsPlatform() || p.Merchant() != "" {
		t.Errorf("platform key: %+v, %v", p, err)
	}
	unknown, _, _ := access.NewKey(access.EnvTest, false, nil)
	if _, err := auth.Authenticate(ctx, unknown); !errors.Is(err, access.ErrUnknownKey) {
		t.Errorf("unknown key: err = %v, want ErrUnknownKey", err)
	}
	lookups := store.Lookups()
	if _, err := auth.Authenticate(ctx, "Bearer "+mer); !errors.Is(err, access.ErrMalformedKey) {
		t.Errorf("malformed: err = %v, want ErrMalformedKey", err)
	}
	if store.Lookups() != lookups {
		t.Error("a malformed key was looked up")
	}
	for _, err := range []error{access.ErrMalformedKey, access.ErrUnknownKey} {
		if strings.Contains(err.Error(), mer) {
			t.Errorf("error %q shows the key", err)
		}
	}
}

// TestRevocationTakesEffectWithinTheTTL: a verified key is trusted from the
// cache for CacheTTL; a revocation is refused once that has passed, never
// later, and an outage of the store is not answered from the cache past it.
func TestRevocationTakesEffectWithinTheTTL(t *testing.T) {
	ctx := context.Background()
	store := accesstest.NewFakeStore()
	clk := &clock{now: t0}
	keys := access.NewKeys(store, clk.Now)
	auth := access.NewAuthenticator(store, clk.Now, access.AuthenticatorConfig{})
	key := issue(t, keys, access.Issue{Env: access.EnvTest, MerchantID: "mer_1", Name: "shop"})
	id, _ := access.ParseKey(key)

	if _, err := auth.Authenticate(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := keys.Revoke(ctx, id.ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(access.CacheTTL - time.Millisecond)
	if _, err := auth.Authenticate(ctx, key); err != nil {
		t.Errorf("within the TTL: err = %v, want the cached principal", err)
	}
	if store.Lookups() != 1 {
		t.Errorf("%d lookups, want 1: the second call should be cached", store.Lookups())
	}
	clk.Advance(time.Millisecond)
	if _, err := auth.Authenticate(ctx, key); !errors.Is(err, access.ErrUnknownKey) {
		t.Errorf("at the TTL: err = %v, want ErrUnknownKey (revoked)", err)
	}

	// A revoked key is never cached: every later call asks again.
	before := store.Lookups()
	_, _ = auth.Authenticate(ctx, key)
	if store.Lookups() != before+1 {
		t.Error("a refused key was answered from the cache")
	}

	other := issue(t, keys, access.Issue{Env: access.EnvTest, MerchantID: "mer_2", Name: "shop 2"})
	if _, err := auth.Authenticate(ctx, other); err != nil {
		t.Fatal(err)
	}
	store.FailLookups(dependency.ErrUnavailable)
	clk.Advance(access.CacheTTL)
	if _, err := auth.Authenticate(ctx, other); !errors.Is(err, dependency.ErrUnavailable) {
		t.Errorf("store down past the TTL: err = %v, want dependency.ErrUnavailable", err)
	}
}

// TestLastUseIsWrittenAtMostOncePerMinute: requests note their key's use in
// memory; Flush writes it, no more than once per TouchEvery per key.
func TestLastUseIsWrittenAtMostOncePerMinute(t *testing.T) {
	ctx := context.Background()
	store := accesstest.NewFakeStore()
	clk := &clock{now: t0}
	keys := access.NewKeys(store, clk.Now)
	auth := access.NewAuthenticator(store, clk.Now, access.AuthenticatorConfig{CacheTTL: -1}) // no cache: every call looks up
	key := issue(t, keys, access.Issue{Env: access.EnvTest, MerchantID: "mer_1", Name: "shop"})
	lastUsed := func() time.Time {
		ks, _ := store.List(ctx)
		return ks[0].LastUsedAt
	}

	for range 5 {
		if _, err := auth.Authenticate(ctx, key); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	if !lastUsed().IsZero() {
		t.Error("last use written before a flush: a write per request")
	}
	if err := auth.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if !lastUsed().Equal(t0) {
		t.Errorf("last used %s, want the first use %s", lastUsed(), t0)
	}
	// Used again within the minute: nothing new to write.
	_, _ = auth.Authenticate(ctx, key)
	_ = auth.Flush(ctx)
	if !lastUsed().Equal(t0) {
		t.Errorf("last used %s within a minute of the last write, want %s kept", lastUsed(), t0)
	}
	clk.Advance(access.TouchEvery)
	_, _ = auth.Authenticate(ctx, key)
	_ = auth.Flush(ctx)
	if want := clk.Now(); !lastUsed().Equal(want) {
		t.Errorf("last used %s a minute later, want %s", lastUsed(), want)
	}
}

// TestRunFlushesOnStop: the loop that owns the flushes writes what is
// pending when its context ends, and returns.
func TestRunFlushesOnStop(t *testing.T) {
	store := accesstest.NewFakeStore()
	keys := access.NewKeys(store, time.Now)
	auth := access.NewAuthenticator(store, time.Now, access.AuthenticatorConfig{})
	key := issue(t, keys, access.Issue{Env: access.EnvTest, Platform: true, Name: "ops"})
	if _, err := auth.Authenticate(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := auth.Run(ctx, logtest.Discard()); err != nil {
		t.Fatal(err)
	}
	ks, _ := store.List(context.Background())
	if ks[0].LastUsedAt.IsZero() {
		t.Error("the use was not written at stop")
	}
}

func TestIssue(t *testing.T) {
	ctx := context.Background()
	store := accesstest.NewFakeStore()
	keys := access.NewKeys(store, func() time.Time { return t0 })
	for name, in := range map[string]access.Issue{
		"merchant key without merchant": {Env: access.EnvTest, Name: "x"},
		"platform key with merchant":    {Env: access.EnvTest, Platform: true, MerchantID: "mer_1", Name: "x"},
		"no name":                       {Env: access.EnvTest, MerchantID: "mer_1"},
	} {
		if _, _, err := keys.Issue(ctx, in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}

	demo := "pk_test_demokeymerchant2_" + strings.Repeat("x", 52)
	in := access.Issue{MerchantID: "mer_1", Name: "demo", Import: demo}
	whole, sk, err := keys.Issue(ctx, in)
	if err != nil || whole != demo || sk.ID != "demokeymerchant2" {
		t.Fatalf("import: %q %+v %v", whole, sk, err)
	}
	if _, _, err := keys.Issue(ctx, in); err != nil {
		t.Errorf("importing the same key again: %v, want success (a start-up job reruns it)", err)
	}
	in.MerchantID = "mer_2"
	if _, _, err := keys.Issue(ctx, in); !errors.Is(err, access.ErrKeyExists) {
		t.Errorf("importing it for another merchant: err = %v, want ErrKeyExists", err)
	}
	if _, _, err := keys.Issue(ctx, access.Issue{Platform: true, Name: "demo", Import: demo}); !errors.Is(err, access.ErrMalformedKey) {
		t.Errorf("importing a merchant key as the platform's: err = %v, want ErrMalformedKey", err)
	}
	if _, _, err := keys.Issue(ctx, access.Issue{MerchantID: "mer_1", Name: "demo", Import: "letmein"}); !errors.Is(err, access.ErrMalformedKey) {
		t.Errorf("importing a malformed key: err = %v, want ErrMalformedKey", err)
	}
	if err := keys.Revoke(ctx, "demokeymerchant2"); err != nil {
		t.Fatal(err)
	}
	in.MerchantID = "mer_1"
	if _, _, err := keys.Issue(ctx, in); !errors.Is(err, access.ErrKeyExists) {
		t.Errorf("re-importing a revoked key: err = %v, want ErrKeyExists (a revoked key stays revoked)", err)
	}
}

func TestTokens(t *testing.T) {
	a, b := strings.Repeat("a", 32), strings.Repeat("b", 40)
	tokens, err := access.NewTokens(a + ", " + b)
	if err != nil || tokens.Len() != 2 {
		t.Fatalf("NewTokens: %d tokens, %v", tokens.Len(), err)
	}
	for tok, want := range map[string]error{
		a: nil, b: nil, strings.Repeat("a", 33): access.ErrUnknownKey, a[:31]: access.ErrUnknownKey,
		"": access.ErrMalformedKey, a + " x": access.ErrMalformedKey,
	} {
		if err := tokens.Check(tok); !errors.Is(err, want) && err != want {
			t.Errorf("Check(%q): err = %v, want %v", tok, err, want)
		}
	}
	var none access.Tokens
	if err := none.Check(a); !errors.Is(err, access.ErrUnknownKey) {
		t.Errorf("the empty set accepted a token: %v", err)
	}
	if _, err := access.NewTokens("short"); err == nil || strings.Contains(err.Error(), "short") {
		t.Errorf("a short token: err = %v, want one that does not quote it", err)
	}
	// Printable, long enough, and still no bearer token: a Bearer header
	// could never carry it, so it must stop start-up rather than never match.
	for _, tok := range []string{
		strings.Repeat("a", 31) + "!", strings.Repeat("a", 16) + ":" + strings.Repeat("b", 16),
		strings.Repeat("a", 16) + "=" + strings.Repeat("b", 16), `"` + strings.Repeat("a", 32) + `"`,
		strings.Repeat("a", 16) + "\\" + strings.Repeat("b", 16), strings.Repeat("=", 32),
	} {
		if _, err := access.NewTokens(a + "," + tok); err == nil || !strings.Contains(err.Error(), "token 2 ") || strings.Contains(err.Error(), tok) {
			t.Errorf("NewTokens(…, %q): err = %v, want one naming token 2 and not quoting it", tok, err)
		}
		if err := tokens.Check(tok); !errors.Is(err, access.ErrMalformedKey) {
			t.Errorf("Check(%q): err = %v, want ErrMalformedKey", tok, err)
		}
	}
	if _, err := access.NewTokens(strings.Repeat("Az09-._~+/", 4) + "=="); err != nil {
		t.Errorf("a token of every b64token character: %v", err)
	}
}

func TestIsB64Token(t *testing.T) {
	for s, want := range map[string]bool{
		"abc": true, "a-b.c_d~e+f/g": true, "abc==": true, "Z9": true,
		"": false, "==": false, "a=b": false, "a b": false, "a\tb": false, "clé": false,
		"a!": false, "a:b": false, "a,b": false, `"a"`: false, "a\x00": false,
	} {
		if got := access.IsB64Token(s); got != want {
			t.Errorf("IsB64Token(%q) = %v, want %v", s, got, want)
		}
	}
}

// BenchmarkAuthenticateCached is what a request with a key verified in the
// last CacheTTL costs: the form check, one SHA-256, a map lookup under a
// mutex. docs/BENCHMARKS.md records it beside the API's throughput.
func BenchmarkAuthenticateCached(b *testing.B) {
	store := accesstest.NewFakeStore()
	keys := access.NewKeys(store, time.Now)
	key, _, err := keys.Issue(context.Background(), access.Issue{Env: access.EnvTest, Platform: true, Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	auth := access.NewAuthenticator(store, time.Now, access.AuthenticatorConfig{})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := auth.Authenticate(ctx, key); err != nil {
				b.Fatal(err)
			}
		}
	})
}
