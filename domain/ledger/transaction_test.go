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
		Payer:      "cus_1",
		Merchant:   "mer_1",
		Amount:     1050,
		Currency:   "BRL",
		OccurredAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
	}
}

func TestNewPaymentDebitsPayerCreditsMerchant(t *testing.T) {
	tx, err := ledger.NewPayment(validPosting())
	if err != nil {
		t.Fatalf("NewPayment: %v", err)
	}
	got := entriesString(tx)
	if want := "cus_1:-1050 BRL mer_1:1050 BRL"; got != want {
		t.Errorf("entries: got %q, want %q", got, want)
	}
	if !tx.Balanced() || tx.Kind() != ledger.KindPayment || tx.Amount() != 1050 {
		t.Errorf("got balanced=%v kind=%q amount=%d, want true payment 1050", tx.Balanced(), tx.Kind(), tx.Amount())
	}
}

func TestNewRefundReversesThePayment(t *testing.T) {
	p := validPosting()
	p.RefundID = "5a0b1b42-5c4a-4d84-9d0c-9a1f2f0b3c11"
	p.Amount = 500
	tx, err := ledger.NewRefund(p)
	if err != nil {
		t.Fatalf("NewRefund: %v", err)
	}
	if got, want := entriesString(tx), "mer_1:-500 BRL cus_1:500 BRL"; got != want {
		t.Errorf("entries: got %q, want %q", got, want)
	}
	if tx.RefundID() != p.RefundID || tx.Kind() != ledger.KindRefund {
		t.Errorf("got refund id %q kind %q, want %q refund", tx.RefundID(), tx.Kind(), p.RefundID)
	}
}

func TestInvalidPostings(t *testing.T) {
	tests := []struct {
		name   string
		refund bool
		mutate func(*ledger.Posting)
	}{
		{"zero amount", false, func(p *ledger.Posting) { p.Amount = 0 }},
		{"negative amount", false, func(p *ledger.Posting) { p.Amount = -5 }},
		{"lower-case currency", false, func(p *ledger.Posting) { p.Currency = "brl" }},
		{"long currency", false, func(p *ledger.Posting) { p.Currency = "BRLX" }},
		{"missing payer", false, func(p *ledger.Posting) { p.Payer = "" }},
		{"control char in merchant", false, func(p *ledger.Posting) { p.Merchant = "mer\n1" }},
		{"huge account", false, func(p *ledger.Posting) { p.Merchant = strings.Repeat("m", 256) }},
		{"missing message id", false, func(p *ledger.Posting) { p.MessageID = "" }},
		{"missing payment id", false, func(p *ledger.Posting) { p.PaymentID = "" }},
		{"missing time", false, func(p *ledger.Posting) { p.OccurredAt = time.Time{} }},
		{"payment with refund id", false, func(p *ledger.Posting) { p.RefundID = "r" }},
		{"refund without refund id", true, func(p *ledger.Posting) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPosting()
			tt.mutate(&p)
			build := ledger.NewPayment
			if tt.refund {
				build = ledger.NewRefund
			}
			_, err := build(p)
			if !errors.Is(err, ledger.ErrInvalidTransaction) {
				t.Errorf("got %v, want ErrInvalidTransaction", err)
			}
		})
	}
}

func TestEntriesReturnsACopy(t *testing.T) {
	tx, err := ledger.NewPayment(validPosting())
	if err != nil {
		t.Fatal(err)
	}
	es := tx.Entries()
	es[0] = es[1]
	if !tx.Balanced() {
		t.Error("mutating the returned slice unbalanced the transaction")
	}
}

func TestNewAccountID(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"mer_1", true},
		{"ünïcode-ok", true},
		{"", false},
		{"tab\there", false},
		{string([]byte{0xff}), false},
		{strings.Repeat("a", 255), true},
		{strings.Repeat("a", 256), false},
	}
	for _, tt := range tests {
		_, err := ledger.NewAccountID(tt.in)
		if got := err == nil; got != tt.want {
			t.Errorf("NewAccountID(%q): got ok=%v, want %v (err %v)", tt.in, got, tt.want, err)
		}
	}
}

func entriesString(tx ledger.Transaction) string {
	var parts []string
	for _, e := range tx.Entries() {
		parts = append(parts, e.Account().String()+":"+strconv.FormatInt(e.Amount(), 10)+" "+e.Currency())
	}
	return strings.Join(parts, " ")
}
