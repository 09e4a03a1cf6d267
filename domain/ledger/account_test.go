package ledger_test

import (
	"errors"
	"strings"
	"testing"
	"testing/quick"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

func TestAccountNames(t *testing.T) {
	tests := []struct {
		name string
		acc  func() (ledger.AccountID, error)
		want string
	}{
		{"merchant", func() (ledger.AccountID, error) { return ledger.MerchantAccount("mer_1") }, "merchant:mer_1"},
		{"payer", func() (ledger.AccountID, error) { return ledger.PayerAccount("mer_1", "cus_1") }, "payer:mer_1:cus_1"},
		{"the attack: a payer named after another merchant", func() (ledger.AccountID, error) { return ledger.PayerAccount("mer_A", "mer_B") }, "payer:mer_A:mer_B"},
		{"a payer id that spells a merchant account", func() (ledger.AccountID, error) { return ledger.PayerAccount("mer_A", "merchant:mer_B") },
			"payer:mer_A:merchant%3Amer_B"},
		{"a merchant id with a colon", func() (ledger.AccountID, error) { return ledger.MerchantAccount("mer:1") }, "merchant:mer%3A1"},
		{"percent and space", func() (ledger.AccountID, error) { return ledger.PayerAccount("m", "50% off") }, "payer:m:50%25%20off"},
		{"non-ASCII, byte by byte", func() (ledger.AccountID, error) { return ledger.MerchantAccount("ünï") }, "merchant:%C3%BCn%C3%AF"},
		{"unreserved characters stay", func() (ledger.AccountID, error) { return ledger.MerchantAccount("Az09-._~") }, "merchant:Az09-._~"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := tt.acc()
			if err != nil {
				t.Fatal(err)
			}
			if got := a.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			back, err := ledger.ParseAccountID(tt.want)
			if err != nil || back != a {
				t.Errorf("ParseAccountID(%q): got %v, %v; want the same account back", tt.want, back, err)
			}
		})
	}
}

func TestAccountOwnersAreChecked(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"plain", "mer_1", true},
		{"non-ASCII", "ünïcode-ok", true},
		{"empty", "", false},
		{"tab", "tab\there", false},
		{"DEL", "del\x7f", false},
		{"not UTF-8", string([]byte{0xff}), false},
		{"255 bytes", strings.Repeat("a", 255), true},
		{"256 bytes", strings.Repeat("a", 256), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errM := ledger.MerchantAccount(tt.in)
			_, errP := ledger.PayerAccount("mer_1", tt.in)
			_, errPM := ledger.PayerAccount(tt.in, "cus_1")
			for i, err := range []error{errM, errP, errPM} {
				if got := err == nil; got != tt.want {
					t.Errorf("owner %d of %q: got ok=%v, want %v (err %v)", i, tt.in, got, tt.want, err)
				}
				if err != nil && !errors.Is(err, ledger.ErrInvalidAccount) {
					t.Errorf("got %v, want ErrInvalidAccount", err)
				}
			}
		})
	}
}

// TestParseAccountIDTakesOnlyCanonicalNames: one account has one name, so
// that neither a balance read nor storage can see one account as two.
func TestParseAccountIDTakesOnlyCanonicalNames(t *testing.T) {
	for _, s := range []string{
		"", "mer_1", "merchant", "merchant:", "merchant:mer_1:cus_1", "payer:mer_1", "payer:mer_1:", "payer::cus_1",
		"customer:mer_1", "Merchant:mer_1", " merchant:mer_1",
		"merchant:mer%3a1",    // lower-case hex
		"merchant:mer%5F1",    // an escape of a character that needs none
		"merchant:mer 1",      // a raw space
		"merchant:mer%",       // a broken escape
		"merchant:mer%4",      // a broken escape
		"merchant:%0A",        // a control character, escaped
		"merchant:%FF",        // not UTF-8, escaped
		"payer:mer_1:cus%3",   // a broken escape at the end
		"merchant:m\u00fcr_1", // raw non-ASCII
	} {
		if a, err := ledger.ParseAccountID(s); !errors.Is(err, ledger.ErrInvalidAccount) {
			t.Errorf("ParseAccountID(%q): got %v, %v; want ErrInvalidAccount", s, a, err)
		}
	}
}

// TestNoPayerIDNamesAnotherMerchantsAccount: whatever payer id a merchant
// sends, its payer account's name reads back as that payer of that merchant
// — so it is no merchant's account, nor an account of another merchant —
// and two different (merchant, payer) pairs never share a name.
func TestNoPayerIDNamesAnotherMerchantsAccount(t *testing.T) {
	check := func(merchant, payer, other string) bool {
		a, err := ledger.PayerAccount(merchant, payer)
		if err != nil {
			return true // refused: names nothing
		}
		parsed, err := ledger.ParseAccountID(a.String())
		if err != nil || parsed != a || parsed.Role() != ledger.RolePayer || parsed.Merchant() != merchant || parsed.Payer() != payer {
			t.Errorf("payer %q of %q: its name %q reads back as %v (%s of %q, payer %q), %v",
				payer, merchant, a, parsed, parsed.Role(), parsed.Merchant(), parsed.Payer(), err)
			return false
		}
		if m, err := ledger.MerchantAccount(payer); err == nil && m.String() == a.String() {
			t.Errorf("payer %q of %q is named like merchant %q's account: %q", payer, merchant, payer, a)
			return false
		}
		if other == merchant {
			return true
		}
		for _, b := range []func() (ledger.AccountID, error){
			func() (ledger.AccountID, error) { return ledger.MerchantAccount(other) },
			func() (ledger.AccountID, error) { return ledger.PayerAccount(other, payer) },
			func() (ledger.AccountID, error) { return ledger.PayerAccount(other, merchant) },
		} {
			if b, err := b(); err == nil && b.String() == a.String() {
				t.Errorf("payer %q of %q shares the name %q with %q's account %v", payer, merchant, a, other, b)
				return false
			}
		}
		return true
	}
	// The ids an attacker would try first, then random ones.
	attacks := []string{"mer_B", "merchant:mer_B", ":mer_B", "mer_A:cus_1", "%3A", "payer:mer_B:cus_1", "mer_B%3Acus_1", "mer_B:", "%"}
	for _, p := range attacks {
		for _, o := range append([]string{"mer_B", "cus_1", "B"}, attacks...) {
			check("mer_A", p, o)
			check("mer_A:x", p, o)
		}
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 20000}); err != nil {
		t.Error(err)
	}
}

func TestRoles(t *testing.T) {
	m, _ := ledger.MerchantAccount("mer_1")
	p, _ := ledger.PayerAccount("mer_1", "cus_1")
	if m.Role() != ledger.RoleMerchant || m.Role().String() != "merchant" || m.Merchant() != "mer_1" || m.Payer() != "" {
		t.Errorf("merchant account: got %s of %q payer %q", m.Role(), m.Merchant(), m.Payer())
	}
	if p.Role() != ledger.RolePayer || p.Role().String() != "payer" || p.Merchant() != "mer_1" || p.Payer() != "cus_1" {
		t.Errorf("payer account: got %s of %q payer %q", p.Role(), p.Merchant(), p.Payer())
	}
	var zero ledger.AccountID
	if zero.String() != "" || zero.Role().String() != "Role(0)" {
		t.Errorf("zero account: got %q, role %s", zero, zero.Role())
	}
}

func FuzzParseAccountID(f *testing.F) {
	for _, s := range []string{"merchant:mer_1", "payer:mer_1:cus_1", "payer:a%3Ab:c", "merchant:%C3%BC"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ledger.ParseAccountID(s)
		if err != nil {
			return
		}
		if a.String() != s {
			t.Errorf("ParseAccountID(%q) accepted a name whose account is %q", s, a)
		}
		var b ledger.AccountID
		switch a.Role() {
		case ledger.RoleMerchant:
			b, err = ledger.MerchantAccount(a.Merchant())
		case ledger.RolePayer:
			b, err = ledger.PayerAccount(a.Merchant(), a.Payer())
		}
		if err != nil || b != a {
			t.Errorf("%q: rebuilt from its owners: %v, %v", s, b, err)
		}
	})
}

// TestRolesAndTheirForms: every role is listed, with the form of its names,
// each owner in the order its names hold it.
func TestRolesAndTheirForms(t *testing.T) {
	var got []string
	for _, r := range ledger.Roles() {
		got = append(got, r.Form())
	}
	if want := "merchant:<merchant_id> payer:<merchant_id>:<payer_id>"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(got, " "), want)
	}
	ps := ledger.Parties{Merchant: "mer_1", Payer: "cus_1"}
	for _, r := range ledger.Roles() {
		a, err := r.Account(ps)
		if err != nil || a.Role() != r || a.Merchant() != "mer_1" {
			t.Errorf("%s of %+v: got %v, %v", r, ps, a, err)
		}
	}
	if _, err := ledger.Role(0).Account(ps); !errors.Is(err, ledger.ErrInvalidAccount) {
		t.Errorf("the zero role's account: got %v, want ErrInvalidAccount", err)
	}
}
