package idempotency_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/application/idempotency"
)

func TestNewKey(t *testing.T) {
	for _, tc := range []struct {
		name, key string
		wantErr   error
		wantNil   bool
	}{
		{"none", "", nil, true},
		{"printable", "order-42:retry_1", nil, false},
		{"the longest", strings.Repeat("k", idempotency.MaxKeyLen), nil, false},
		{"too long", strings.Repeat("k", idempotency.MaxKeyLen+1), idempotency.ErrInvalidKey, true},
		{"a space", "order 42", idempotency.ErrInvalidKey, true},
		{"a control character", "order\n42", idempotency.ErrInvalidKey, true},
		{"not ASCII", "clé", idempotency.ErrInvalidKey, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := idempotency.NewKey("mer_1", tc.key, "create", "100")
			if !errors.Is(err, tc.wantErr) || (k == nil) != tc.wantNil {
				t.Fatalf("NewKey(%q) = %+v, %v; want nil %v, error %v", tc.key, k, err, tc.wantNil, tc.wantErr)
			}
			if k != nil && (k.Merchant != "mer_1" || k.Key != tc.key || k.Fingerprint == "") {
				t.Errorf("NewKey(%q) = %+v", tc.key, k)
			}
		})
	}
}

// TestFingerprint: the same request has the same fingerprint; another
// request, even one whose parts only join alike, has another; and the
// fingerprint is pinned, since stored keys are compared with it for as
// long as they live (KeyTTL).
func TestFingerprint(t *testing.T) {
	fp := func(parts ...string) string {
		k, err := idempotency.NewKey("mer_1", "k", parts...)
		if err != nil {
			t.Fatal(err)
		}
		return k.Fingerprint
	}
	if a, b := fp("create", "100"), fp("create", "100"); a != b {
		t.Errorf("the same request: fingerprints %s and %s", a, b)
	}
	if fp("ab", "c") == fp("a", "bc") {
		t.Error(`("ab", "c") and ("a", "bc") share a fingerprint: the parts are not length-prefixed`)
	}
	if fp("create", "100") == fp("create", "101") {
		t.Error("two requests share a fingerprint")
	}
	// sha256 of "6:create|3:100|".
	if got, want := fp("create", "100"), "d1872ba8192140683326c59915b64be4332cdd382230608d6026242487dbbc55"; got != want {
		t.Errorf("fingerprint = %s, want %s", got, want)
	}
}

// TestScopedKeysOfTwoMerchantsDiffer: the string a store locks a key by
// is the merchant's and the key's, so the same key of two merchants, or
// pairs that join alike, never share it.
func TestScopedKeysOfTwoMerchantsDiffer(t *testing.T) {
	a := idempotency.Key{Merchant: "mer_1", Key: "k"}
	b := idempotency.Key{Merchant: "mer_2", Key: "k"}
	c := idempotency.Key{Merchant: "mer_", Key: "1k"}
	if a.Scoped() == b.Scoped() || a.Scoped() == c.Scoped() {
		t.Errorf("scoped %q, %q, %q: want three", a.Scoped(), b.Scoped(), c.Scoped())
	}
}
