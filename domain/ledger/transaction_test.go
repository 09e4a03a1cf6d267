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

func TestPayerToMerchantDebitsPayerCreditsMerchant(t *testing.T) {
	tx, err := ledger.NewTransfer(validPosting(), ledger.PayerToMerchant)
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

func TestMerchantToPayerReversesThePayment(t *testing.T) {
	p := validPosting()
	p.Kind = "refund"
	p.FactID = "5a0b1b42-5c4a-4d84-9d0c-9a1f2f0b3c11"
	p.Amount = 500
	tx, err := ledger.NewTransfer(p, ledger.MerchantToPayer)
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
		name      string
		direction ledger.Direction
		mutate    func(*ledger.Posting)
	}{
		{"zero amount", ledger.PayerToMerchant, func(p *ledger.Posting) { p.Amount = 0 }},
		{"negative amount", ledger.PayerToMerchant, func(p *ledger.Posting) { p.Amount = -5 }},
		{"lower-case currency", ledger.PayerToMerchant, func(p *ledger.Posting) { p.Currency = "brl" }},
		{"long currency", ledger.PayerToMerchant, func(p *ledger.Posting) { p.Currency = "BRLX" }},
		{"missing payer", ledger.PayerToMerchant, func(p *ledger.Posting) { p.Payer = "" }},
		{"control char in merchant", ledger.MerchantToPayer, func(p *ledger.Posting) { p.Merchant = "mer\n1" }},
		{"huge merchant", ledger.PayerToMerchant, func(p *ledger.Posting) { p.Merchant = strings.Repeat("m", 256) }},
		{"huge payer", ledger.PayerToMerchant, func(p *ledger.Posting) { p.Payer = strings.Repeat("p", 256) }},
		{"missing merchant", ledger.MerchantToPayer, func(p *ledger.Posting) { p.Merchant = "" }},
		{"payer not UTF-8", ledger.PayerToMerchant, func(p *ledger.Posting) { p.Payer = string([]byte{0xff}) }},
		{"missing message id", ledger.PayerToMerchant, func(p *ledger.Posting) { p.MessageID = "" }},
		{"missing payment id", ledger.PayerToMerchant, func(p *ledger.Posting) { p.PaymentID = "" }},
		{"missing time", ledger.PayerToMerchant, func(p *ledger.Posting) { p.OccurredAt = time.Time{} }},
		{"missing kind", ledger.PayerToMerchant, func(p *ledger.Posting) { p.Kind = "" }},
		{"kind not in the database's form", ledger.PayerToMerchant, func(p *ledger.Posting) { p.Kind = "Payment" }},
		{"kind starting with an underscore", ledger.PayerToMerchant, func(p *ledger.Posting) { p.Kind = "_payment" }},
		{"no direction", 0, func(p *ledger.Posting) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPosting()
			tt.mutate(&p)
			_, err := ledger.NewTransfer(p, tt.direction)
			if !errors.Is(err, ledger.ErrInvalidTransaction) {
				t.Errorf("got %v, want ErrInvalidTransaction", err)
			}
		})
	}
}

func TestEntriesReturnsACopy(t *testing.T) {
	tx, err := ledger.NewTransfer(validPosting(), ledger.PayerToMerchant)
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
