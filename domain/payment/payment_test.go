package payment

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 123_000_000, time.UTC)

const (
	pid  = ID("0b6f8a2e-59d4-4a59-9c38-0c1b2d6f9a01")
	rid1 = RefundID("1b6f8a2e-59d4-4a59-9c38-0c1b2d6f9a01")
	rid2 = RefundID("2b6f8a2e-59d4-4a59-9c38-0c1b2d6f9a01")
	rid3 = RefundID("3b6f8a2e-59d4-4a59-9c38-0c1b2d6f9a01")
)

func mustMoney(t *testing.T, minor int64, cur string) Money {
	t.Helper()
	m, err := NewMoney(minor, cur)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNewRecordsCreated(t *testing.T) {
	amount := mustMoney(t, 1050, "BRL")
	p, err := New(pid, 1050, "brl", "cus_1", "mer_1", "pão de queijo", now)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status() != StatusCreated || p.RefundedMinor() != 0 {
		t.Errorf("got status %q refunded %d, want created 0", p.Status(), p.RefundedMinor())
	}
	want := []Event{Created{PaymentID: pid, Amount: amount, PayerID: "cus_1", MerchantID: "mer_1", At: now}}
	if got := p.PullEvents(); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %+v, want %+v", got, want)
	}
	if got := p.PullEvents(); len(got) != 0 {
		t.Errorf("second PullEvents = %v, want none", got)
	}
}

func TestNewValidation(t *testing.T) {
	tests := []struct {
		name        string
		id          ID
		amount      int64
		currency    string
		payer, merc string
		desc        string
		wantFields  []string
	}{
		{"missing parties", pid, 1, "BRL", "", "", "", []string{"payer_id", "merchant_id"}},
		{"bad id", "nope", 1, "BRL", "a", "b", "", []string{"id"}},
		{"zero amount", pid, 0, "BRL", "a", "b", "", []string{"amount"}},
		{"unknown currency", pid, 1, "XXX", "a", "b", "", []string{"currency"}},
		{"every field at once", "nope", -5, "ıdr", "", "", "\x00", []string{"id", "amount", "currency", "payer_id", "merchant_id", "description"}},
		{"long payer", pid, 1, "BRL", strings.Repeat("x", MaxPartyIDLen+1), "b", "", []string{"payer_id"}},
		{"long description", pid, 1, "BRL", "a", "b", strings.Repeat("é", MaxDescriptionLen+1), []string{"description"}},
		{"invalid utf-8", pid, 1, "BRL", "a\xff", "b", "", []string{"payer_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.id, tt.amount, tt.currency, tt.payer, tt.merc, tt.desc, now)
			var v *ValidationError
			if !errors.As(err, &v) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want *ValidationError matching ErrInvalid", err)
			}
			var got []string
			for _, p := range v.Problems {
				got = append(got, p.Field)
			}
			if !reflect.DeepEqual(got, tt.wantFields) {
				t.Errorf("fields = %v, want %v", got, tt.wantFields)
			}
		})
	}
}

func TestRefund(t *testing.T) {
	type step struct {
		id         RefundID
		minor      int64
		currency   string
		wantErr    error
		wantStatus Status
		wantTotal  int64
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"full refund at once", []step{
			{rid1, 1000, "BRL", nil, StatusRefunded, 1000},
		}},
		{"partial then rest", []step{
			{rid1, 300, "BRL", nil, StatusPartiallyRefunded, 300},
			{rid2, 700, "BRL", nil, StatusRefunded, 1000},
		}},
		{"over the amount leaves state untouched", []step{
			{rid1, 600, "BRL", nil, StatusPartiallyRefunded, 600},
			{rid2, 401, "BRL", ErrRefundExceedsAmount, StatusPartiallyRefunded, 600},
			{rid3, 400, "BRL", nil, StatusRefunded, 1000},
		}},
		{"nothing left after full refund", []step{
			{rid1, 1000, "BRL", nil, StatusRefunded, 1000},
			{rid2, 1, "BRL", ErrRefundExceedsAmount, StatusRefunded, 1000},
		}},
		{"currency mismatch", []step{
			{rid1, 100, "USD", ErrCurrencyMismatch, StatusCreated, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(pid, 1000, "BRL", "cus_1", "mer_1", "", now)
			if err != nil {
				t.Fatal(err)
			}
			p.PullEvents()
			for i, s := range tt.steps {
				at := now.Add(time.Duration(i+1) * time.Minute)
				r, err := p.Refund(s.id, mustMoney(t, s.minor, s.currency), at)
				if !errors.Is(err, s.wantErr) {
					t.Fatalf("step %d: err = %v, want %v", i, err, s.wantErr)
				}
				if p.Status() != s.wantStatus || p.RefundedMinor() != s.wantTotal {
					t.Fatalf("step %d: got %q %d, want %q %d", i, p.Status(), p.RefundedMinor(), s.wantStatus, s.wantTotal)
				}
				events := p.PullEvents()
				if s.wantErr != nil {
					if len(events) != 0 {
						t.Fatalf("step %d: failed refund recorded %v", i, events)
					}
					continue
				}
				want := Refunded{
					PaymentID: pid, RefundID: s.id, Amount: mustMoney(t, s.minor, s.currency),
					RefundedTotal: mustMoney(t, s.wantTotal, "BRL"), PayerID: "cus_1", MerchantID: "mer_1", At: at,
				}
				if len(events) != 1 || events[0] != want {
					t.Fatalf("step %d: events = %+v, want [%+v]", i, events, want)
				}
				if r.ID != s.id || r.Amount.Minor() != s.minor || !r.CreatedAt.Equal(at) {
					t.Errorf("step %d: refund = %+v", i, r)
				}
			}
		})
	}
}

func TestRehydrateRoundTripRecordsNothing(t *testing.T) {
	p, err := New(pid, 1000, "BRL", "cus_1", "mer_1", "d", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Refund(rid1, mustMoney(t, 250, "BRL"), now); err != nil {
		t.Fatal(err)
	}
	q, err := Rehydrate(p.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if q.Snapshot() != p.Snapshot() {
		t.Errorf("got %+v, want %+v", q.Snapshot(), p.Snapshot())
	}
	if ev := q.PullEvents(); len(ev) != 0 {
		t.Errorf("rehydrated payment recorded %v", ev)
	}
}

func TestRehydrateRefusesBrokenInvariants(t *testing.T) {
	good := Snapshot{ID: pid, AmountMinor: 100, Currency: "BRL", Status: StatusCreated, PayerID: "a", MerchantID: "b"}
	for name, mutate := range map[string]func(*Snapshot){
		"refunded over amount": func(s *Snapshot) { s.RefundedMinor = 101 },
		"negative refunded":    func(s *Snapshot) { s.RefundedMinor = -1 },
		"unknown status":       func(s *Snapshot) { s.Status = "captured" },
		"bad currency":         func(s *Snapshot) { s.Currency = "ZZZ" },
	} {
		t.Run(name, func(t *testing.T) {
			s := good
			mutate(&s)
			if _, err := Rehydrate(s); err == nil {
				t.Fatal("Rehydrate accepted a broken snapshot")
			}
		})
	}
}

func TestParseID(t *testing.T) {
	for _, s := range []string{"", "1", "0b6f8a2e59d44a599c380c1b2d6f9a01", "0b6f8a2e-59d4-4a59-9c38-0c1b2d6f9a0z", "' OR 1=1 --"} {
		if _, err := ParseID(s); !errors.Is(err, ErrNotFound) {
			t.Errorf("ParseID(%q) err = %v, want ErrNotFound", s, err)
		}
	}
	if id, err := ParseID(string(pid)); err != nil || id != pid {
		t.Errorf("ParseID(valid) = %q, %v", id, err)
	}
}
