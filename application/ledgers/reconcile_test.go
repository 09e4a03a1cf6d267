package ledgers_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

type factsFunc func() ([]ledgers.Fact, error)

func (f factsFunc) PaymentFacts(context.Context) ([]ledgers.Fact, error) { return f() }
func (f factsFunc) LedgerFacts(context.Context) ([]ledgers.Fact, error)  { return f() }

// legs are the entries a ledger fact holds, written out here for each kind
// rather than read from the registry's postings: reconcile must find the
// ledger's entries equal to what the registry declares, so a declaration
// that swapped its roles makes the matching cases below diverge.
func legs(t *testing.T, debit, credit string, amount int64) []ledger.Entry {
	t.Helper()
	from, err := ledger.ParseAccountID(debit)
	if err != nil {
		t.Fatal(err)
	}
	to, err := ledger.ParseAccountID(credit)
	if err != nil {
		t.Fatal(err)
	}
	return []ledger.Entry{ledger.RehydrateEntry(from, -amount, "BRL"), ledger.RehydrateEntry(to, amount, "BRL")}
}

func TestReconcile(t *testing.T) {
	old := now.Add(-time.Hour)
	parties := ledger.Parties{Merchant: "mer_1", Payer: "cus_1"}
	const merchant, payer = "merchant:mer_1", "payer:mer_1:cus_1"
	// The payments database's facts name their parties; the ledger's hold
	// their entries.
	pay := func(id string, amount int64, at time.Time) ledgers.Fact {
		return ledgers.Fact{PaymentID: id, Kind: "payment", Amount: amount, Currency: "BRL", At: at, Parties: parties}
	}
	ref := func(id, rid string, amount int64, at time.Time) ledgers.Fact {
		return ledgers.Fact{PaymentID: id, Kind: "refund", FactID: rid, Amount: amount, Currency: "BRL", At: at, Parties: parties}
	}
	posted := func(f ledgers.Fact, debit, credit string) ledgers.Fact {
		f.Parties, f.At = ledger.Parties{}, time.Time{}
		if debit != "" {
			f.Entries = legs(t, debit, credit, f.Amount)
		}
		return f
	}
	payment := func(id string, amount int64) ledgers.Fact { return posted(pay(id, amount, old), payer, merchant) }
	refund := func(id, rid string, amount int64) ledgers.Fact {
		return posted(ref(id, rid, amount, old), merchant, payer)
	}
	hold := func(kind ledger.Kind) ledgers.Fact {
		return ledgers.Fact{PaymentID: "p2", Kind: kind, Amount: 500, Currency: "BRL", At: old, Parties: parties}
	}
	capture := ledgers.Fact{PaymentID: "p2", Kind: "capture", Amount: 400, Currency: "BRL", At: old, Parties: parties}
	tests := []struct {
		name     string
		payments []ledgers.Fact
		ledger   []ledgers.Fact
		want     []string // substrings, one per divergence, in order
	}{
		{"match", []ledgers.Fact{pay("p1", 100, old), ref("p1", "r1", 40, old)}, []ledgers.Fact{payment("p1", 100), refund("p1", "r1", 40)}, nil},
		{"a manual payment matches", []ledgers.Fact{hold("authorization"), capture, ref("p2", "r2", 30, old)},
			[]ledgers.Fact{posted(hold("authorization"), "", ""), posted(capture, payer, merchant), refund("p2", "r2", 30)}, nil},
		{"missing payment", []ledgers.Fact{pay("p1", 100, old)}, nil, []string{"payment p1: no ledger transaction"}},
		{"young payment within grace", []ledgers.Fact{pay("p1", 100, now.Add(-time.Second))}, nil, nil},
		{"missing refund", []ledgers.Fact{pay("p1", 100, old), ref("p1", "r1", 40, old)}, []ledgers.Fact{payment("p1", 100)}, []string{"refund r1 of payment p1: no ledger transaction"}},
		{"amount differs", []ledgers.Fact{pay("p1", 100, old)}, []ledgers.Fact{payment("p1", 99)}, []string{"payment p1: ledger has 99 BRL, payments database has 100 BRL"}},
		{"a refund posted the wrong way", []ledgers.Fact{ref("p1", "r1", 40, old)}, []ledgers.Fact{posted(ref("p1", "r1", 40, old), payer, merchant)},
			[]string{`refund r1 of payment p1: ledger posted merchant:mer_1 +40 BRL, payer:mer_1:cus_1 -40 BRL; the postings of kind refund between merchant "mer_1" and payer "cus_1" are merchant:mer_1 -40 BRL, payer:mer_1:cus_1 +40 BRL`}},
		{"a payment posted to another payer", []ledgers.Fact{pay("p1", 100, old)}, []ledgers.Fact{posted(pay("p1", 100, old), "payer:mer_1:cus_2", merchant)},
			[]string{"payment p1: ledger posted merchant:mer_1 +100 BRL, payer:mer_1:cus_2 -100 BRL"}},
		{"a hold with entries", []ledgers.Fact{hold("cancellation")}, []ledgers.Fact{posted(hold("cancellation"), payer, merchant)},
			[]string{"cancellation p2: ledger posted merchant:mer_1 +500 BRL, payer:mer_1:cus_1 -500 BRL; the postings of kind cancellation between merchant \"mer_1\" and payer \"cus_1\" are no entries"}},
		{"parties that own no account", []ledgers.Fact{{PaymentID: "p1", Kind: "payment", Amount: 100, Currency: "BRL", At: old}}, []ledgers.Fact{payment("p1", 100)},
			[]string{"payment p1: the payments database's parties"}},
		{"orphan ledger row", nil, []ledgers.Fact{payment("p9", 5)}, []string{"payment p9: ledger transaction of 5 BRL has no matching row"}},
		{"a kind the registry does not post", []ledgers.Fact{{PaymentID: "p1", Kind: "hold", Amount: 100, Currency: "BRL", At: now}},
			nil, []string{`hold p1: no event type of the ledger's registry posts facts of kind "hold"`}},
		{"two ledger rows", []ledgers.Fact{pay("p1", 100, old)}, []ledgers.Fact{payment("p1", 100), payment("p1", 100)}, []string{"2 ledger transactions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ledgers.NewReconciler(
				factsFunc(func() ([]ledgers.Fact, error) { return tt.payments, nil }),
				factsFunc(func() ([]ledgers.Fact, error) { return tt.ledger, nil }),
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
	r := ledgers.NewReconciler(
		factsFunc(func() ([]ledgers.Fact, error) { return nil, boom }),
		factsFunc(func() ([]ledgers.Fact, error) { return nil, nil }),
		func() time.Time { return now })
	if _, err := r.Reconcile(context.Background(), time.Minute); !errors.Is(err, boom) {
		t.Errorf("got %v, want %v", err, boom)
	}
}
