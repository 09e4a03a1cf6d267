package bookkeeping_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/bookkeeping"
)

type factsFunc func() ([]bookkeeping.Fact, error)

func (f factsFunc) PaymentFacts(context.Context) ([]bookkeeping.Fact, error) { return f() }
func (f factsFunc) LedgerFacts(context.Context) ([]bookkeeping.Fact, error)  { return f() }

func TestReconcile(t *testing.T) {
	old := now.Add(-time.Hour)
	pay := func(id string, amount int64, at time.Time) bookkeeping.Fact {
		return bookkeeping.Fact{PaymentID: id, Kind: "payment", Amount: amount, Currency: "BRL", At: at}
	}
	ref := func(id, rid string, amount int64, at time.Time) bookkeeping.Fact {
		return bookkeeping.Fact{PaymentID: id, Kind: "refund", FactID: rid, Amount: amount, Currency: "BRL", At: at}
	}
	tests := []struct {
		name     string
		payments []bookkeeping.Fact
		ledger   []bookkeeping.Fact
		want     []string // substrings, one per divergence, in order
	}{
		{"match", []bookkeeping.Fact{pay("p1", 100, old), ref("p1", "r1", 40, old)}, []bookkeeping.Fact{pay("p1", 100, time.Time{}), ref("p1", "r1", 40, time.Time{})}, nil},
		{"missing payment", []bookkeeping.Fact{pay("p1", 100, old)}, nil, []string{"payment p1: no ledger transaction"}},
		{"young payment within grace", []bookkeeping.Fact{pay("p1", 100, now.Add(-time.Second))}, nil, nil},
		{"missing refund", []bookkeeping.Fact{pay("p1", 100, old), ref("p1", "r1", 40, old)}, []bookkeeping.Fact{pay("p1", 100, old)}, []string{"refund r1 of payment p1: no ledger transaction"}},
		{"amount differs", []bookkeeping.Fact{pay("p1", 100, old)}, []bookkeeping.Fact{pay("p1", 99, old)}, []string{"payment p1: ledger has 99 BRL, payments database has 100 BRL"}},
		{"orphan ledger row", nil, []bookkeeping.Fact{pay("p9", 5, old)}, []string{"payment p9: ledger transaction of 5 BRL has no matching row"}},
		{"a kind the registry does not post", []bookkeeping.Fact{{PaymentID: "p1", Kind: "hold", Amount: 100, Currency: "BRL", At: now}},
			nil, []string{`hold p1: no event type of the ledger's registry posts facts of kind "hold"`}},
		{"two ledger rows", []bookkeeping.Fact{pay("p1", 100, old)}, []bookkeeping.Fact{pay("p1", 100, old), pay("p1", 100, old)}, []string{"2 ledger transactions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bookkeeping.NewReconciler(
				factsFunc(func() ([]bookkeeping.Fact, error) { return tt.payments, nil }),
				factsFunc(func() ([]bookkeeping.Fact, error) { return tt.ledger, nil }),
				func() time.Time { return now })
			got, err := r.Reconcile(context.Background(), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d divergences %v, want %d", len(got), got, len(tt.want))
			}
			for i, d := range got {
				if !strings.Contains(d.String(), tt.want[i]) {
					t.Errorf("divergence %d: got %q, want it to contain %q", i, d, tt.want[i])
				}
			}
		})
	}
}

func TestReconcileSourceError(t *testing.T) {
	boom := errors.New("boom")
	r := bookkeeping.NewReconciler(
		factsFunc(func() ([]bookkeeping.Fact, error) { return nil, boom }),
		factsFunc(func() ([]bookkeeping.Fact, error) { return nil, nil }),
		func() time.Time { return now })
	if _, err := r.Reconcile(context.Background(), time.Minute); !errors.Is(err, boom) {
		t.Errorf("got %v, want %v", err, boom)
	}
}
