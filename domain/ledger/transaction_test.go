package ledger_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

func validPosting() ledger.Posting {
	return ledger.Posting{
		MessageID:  "0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6a01",
		PaymentID:  "7d4f8f7c-1d2b-4a53-b8d4-1d5b4cf1b7a2",
		Kind:       "payment",
		Payer:      "cus_1",
		Merchant:   "mer_1",
		Amount:     1050,
		Currency:   "BRL",
		OccurredAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
	}
}

// The declarations these tests post by, written here rather than read from
// the consumer's registry: the domain's rules are checked on their own.
var (
	payerToMerchant = ledger.Postings{Kind: "payment", Debit: ledger.RolePayer, Credit: ledger.RoleMerchant}
	merchantToPayer = ledger.Postings{Kind: "refund", Debit: ledger.RoleMerchant, Credit: ledger.RolePayer, DependsOn: []ledger.Kind{"payment"}}
)

func TestPostingsDebitTheDebitRoleAndCreditTheCreditRole(t *testing.T) {
	tx, err := ledger.NewTransfer(validPosting(), payerToMerchant)
	if err != nil {
		t.Fatalf("NewTransfer: %v", err)
	}
	got := entriesString(tx)
	if want := "payer:mer_1:cus_1:-1050 BRL merchant:mer_1:1050 BRL"; got != want {
		t.Errorf("entries: got %q, want %q", got, want)
	}
	if !tx.Balanced() || tx.Kind() != "payment" || tx.Amount() != 1050 {
		t.Errorf("got balanced=%v kind=%q amount=%d, want true payment 1050", tx.Balanced(), tx.Kind(), tx.Amount())
	}
}

func TestSwappedRolesReverseThePayment(t *testing.T) {
	p := validPosting()
	p.Kind = ""
	p.FactID = "5a0b1b42-5c4a-4d84-9d0c-9a1f2f0b3c11"
	p.Amount = 500
	tx, err := ledger.NewTransfer(p, merchantToPayer)
	if err != nil {
		t.Fatalf("NewTransfer: %v", err)
	}
	if got, want := entriesString(tx), "merchant:mer_1:-500 BRL payer:mer_1:cus_1:500 BRL"; got != want {
		t.Errorf("entries: got %q, want %q", got, want)
	}
	if tx.FactID() != p.FactID || tx.Kind() != "refund" {
		t.Errorf("got fact id %q kind %q, want %q refund", tx.FactID(), tx.Kind(), p.FactID)
	}
}

func TestInvalidPostings(t *testing.T) {
	tests := []struct {
		name     string
		postings ledger.Postings
		mutate   func(*ledger.Posting)
	}{
		{"zero amount", payerToMerchant, func(p *ledger.Posting) { p.Amount = 0 }},
		{"negative amount", payerToMerchant, func(p *ledger.Posting) { p.Amount = -5 }},
		{"lower-case currency", payerToMerchant, func(p *ledger.Posting) { p.Currency = "brl" }},
		{"long currency", payerToMerchant, func(p *ledger.Posting) { p.Currency = "BRLX" }},
		{"missing payer", payerToMerchant, func(p *ledger.Posting) { p.Payer = "" }},
		{"control char in merchant", merchantToPayer, func(p *ledger.Posting) { p.Merchant = "mer\n1" }},
		{"huge merchant", payerToMerchant, func(p *ledger.Posting) { p.Merchant = strings.Repeat("m", 256) }},
		{"huge payer", payerToMerchant, func(p *ledger.Posting) { p.Payer = strings.Repeat("p", 256) }},
		{"missing merchant", merchantToPayer, func(p *ledger.Posting) { p.Merchant = "" }},
		{"payer not UTF-8", payerToMerchant, func(p *ledger.Posting) { p.Payer = string([]byte{0xff}) }},
		{"missing message id", payerToMerchant, func(p *ledger.Posting) { p.MessageID = "" }},
		{"missing payment id", payerToMerchant, func(p *ledger.Posting) { p.PaymentID = "" }},
		{"missing time", payerToMerchant, func(p *ledger.Posting) { p.OccurredAt = time.Time{} }},
		{"missing kind", withKind(""), func(p *ledger.Posting) { p.Kind = "" }},
		{"kind not in the database's form", withKind("Payment"), func(p *ledger.Posting) { p.Kind = "Payment" }},
		{"kind starting with an underscore", withKind("_payment"), func(p *ledger.Posting) { p.Kind = "_payment" }},
		{"a kind not its postings'", payerToMerchant, func(p *ledger.Posting) { p.Kind = "refund" }},
		{"postings that move no money", ledger.Postings{Kind: "payment"}, func(p *ledger.Posting) {}},
		{"postings with one role", ledger.Postings{Kind: "payment", Debit: ledger.RolePayer}, func(p *ledger.Posting) {}},
		{"postings from a role to itself", ledger.Postings{Kind: "payment", Debit: ledger.RolePayer, Credit: ledger.RolePayer}, func(p *ledger.Posting) {}},
		{"postings of no role", ledger.Postings{Kind: "payment", Debit: ledger.RolePayer, Credit: 9}, func(p *ledger.Posting) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPosting()
			tt.mutate(&p)
			_, err := ledger.NewTransfer(p, tt.postings)
			if !errors.Is(err, ledger.ErrInvalidTransaction) {
				t.Errorf("got %v, want ErrInvalidTransaction", err)
			}
		})
	}
}

func withKind(k ledger.Kind) ledger.Postings {
	d := payerToMerchant
	d.Kind = k
	return d
}

// TestPostingsOwnersAreTheFactsParties: each role takes its owners from the
// parties, so the payer id names only an account of the merchant's.
func TestPostingsOwnersAreTheFactsParties(t *testing.T) {
	ps := ledger.Parties{Merchant: "mer_A", Payer: "mer_B"}
	es, err := merchantToPayer.Entries(ps, 7, "BRL")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Account().String()+":"+strconv.FormatInt(e.Amount(), 10))
	}
	if want := "merchant:mer_A:-7 payer:mer_A:mer_B:7"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(got, " "), want)
	}
	if _, err := (ledger.Postings{Kind: "authorization"}).Entries(ps, 7, "BRL"); !errors.Is(err, ledger.ErrInvalidTransaction) {
		t.Errorf("the entries of a kind that moves no money: got %v, want ErrInvalidTransaction", err)
	}
}

func TestPostingsCheck(t *testing.T) {
	for _, tt := range []struct {
		name string
		d    ledger.Postings
		ok   bool
	}{
		{"a transfer", payerToMerchant, true},
		{"a hold, following nothing", ledger.Postings{Kind: "authorization"}, true},
		{"a release, following its hold", ledger.Postings{Kind: "cancellation", DependsOn: []ledger.Kind{"authorization"}}, true},
		{"following itself", ledger.Postings{Kind: "capture", Debit: ledger.RolePayer, Credit: ledger.RoleMerchant, DependsOn: []ledger.Kind{"capture"}}, false},
		{"following a kind of no form", ledger.Postings{Kind: "capture", DependsOn: []ledger.Kind{"Authorization"}}, false},
		{"one role only", ledger.Postings{Kind: "refund", Credit: ledger.RolePayer}, false},
	} {
		if err := tt.d.Check(); (err == nil) != tt.ok || (err != nil && !errors.Is(err, ledger.ErrInvalidTransaction)) {
			t.Errorf("%s: got %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestEntriesReturnsACopy(t *testing.T) {
	tx, err := ledger.NewTransfer(validPosting(), payerToMerchant)
	if err != nil {
		t.Fatal(err)
	}
	es := tx.Entries()
	es[0] = es[1]
	if !tx.Balanced() {
		t.Error("mutating the returned slice unbalanced the transaction")
	}
}

func entriesString(tx ledger.Transaction) string {
	var parts []string
	for _, e := range tx.Entries() {
		parts = append(parts, e.Account().String()+":"+strconv.FormatInt(e.Amount(), 10)+" "+e.Currency())
	}
	return strings.Join(parts, " ")
}
