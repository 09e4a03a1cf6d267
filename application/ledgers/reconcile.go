package ledgers

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// Fact is one business fact that should have exactly one ledger transaction:
// a payment, one refund of it, or a fact of any other kind the registry
// posts. Both sides of a reconciliation describe their rows as Facts so they
// can be compared key by key, and then account by account.
type Fact struct {
	PaymentID string
	Kind      ledger.Kind
	FactID    string // tells facts of one kind on a payment apart: a refund's id; "" for the payment
	Amount    int64
	Currency  string
	At        time.Time // payments side: when the fact was created
	// Parties are who the fact is between, as the payments database says
	// (payments side): the owners of the accounts its kind's postings
	// name.
	Parties ledger.Parties
	// Entries are the legs the ledger posted for the fact (ledger side);
	// none for a fact that moves no money, such as a hold.
	Entries []ledger.Entry
}

// key is the business key shared by both sides.
func (f Fact) key() string { return f.PaymentID + "/" + string(f.Kind) + "/" + f.FactID }

// String names the fact for a divergence report: "payment P", "refund R of
// payment P".
func (f Fact) String() string {
	if f.FactID != "" {
		return fmt.Sprintf("%s %s of payment %s", f.Kind, f.FactID, f.PaymentID)
	}
	return fmt.Sprintf("%s %s", f.Kind, f.PaymentID)
}

// PaymentFacts reads what the payments database says happened.
type PaymentFacts interface {
	// PaymentFacts returns every fact of every kind in Kinds, with its
	// parties.
	PaymentFacts(ctx context.Context) ([]Fact, error)
}

// LedgerFacts reads what the ledger posted.
type LedgerFacts interface {
	// LedgerFacts returns every fact the ledger applied: each posted
	// transaction, with its entries, and each hold placed or released.
	LedgerFacts(ctx context.Context) ([]Fact, error)
}

// Divergence is one disagreement between the payments database and the ledger.
type Divergence struct {
	Fact    Fact
	Problem string
}

// String is the line `ledger reconcile` prints.
func (d Divergence) String() string { return d.Fact.String() + ": " + d.Problem }

// Reconciler checks that the ledger matches the payments database: every
// fact (a payment, a refund) has exactly one ledger transaction of the same
// amount and currency, posted to the accounts its kind's postings name for
// the fact's parties (ledger.Postings.Entries), and no ledger transaction
// lacks its fact. A fact posted the wrong way, or to another payer's
// account, is a divergence. The kinds it compares are the registry's
// (Kinds): a fact of a kind no rule posts is reported as such.
type Reconciler struct {
	payments PaymentFacts
	ledger   LedgerFacts
	now      func() time.Time
}

// NewReconciler returns a Reconciler over the two sources.
func NewReconciler(payments PaymentFacts, l LedgerFacts, now func() time.Time) *Reconciler {
	return &Reconciler{payments: payments, ledger: l, now: now}
}

// Reconcile returns every divergence, sorted for stable output. Facts younger
// than grace are not yet expected in the ledger: their events may still be in
// flight. The ledger is read first: everything it holds was committed in the
// payments database before its event left, so a payment created between the
// two reads can never show up as a ledger row without a payment.
func (r *Reconciler) Reconcile(ctx context.Context, grace time.Duration) ([]Divergence, error) {
	posted, err := r.ledger.LedgerFacts(ctx)
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	facts, err := r.payments.PaymentFacts(ctx)
	if err != nil {
		return nil, fmt.Errorf("read payments: %w", err)
	}
	cutoff := r.now().Add(-grace)

	byKey := make(map[string][]Fact, len(posted))
	for _, p := range posted {
		byKey[p.key()] = append(byKey[p.key()], p)
	}
	var out []Divergence
	seen := make(map[string]bool, len(facts))
	kinds := Kinds()
	for _, f := range facts {
		k := f.key()
		seen[k] = true
		got := byKey[k]
		switch {
		case !slices.Contains(kinds, f.Kind):
			// The kinds are the registry's: a fact of another kind has no
			// posting rule, so whether the ledger should hold it was never
			// decided. Said so, not reported as a missing transaction.
			out = append(out, Divergence{f, fmt.Sprintf("no event type of the ledger's registry posts facts of kind %q (application/ledgers/events.go): give the kind a rule there, or take it out of the payments database's ledger_facts", f.Kind)})
		case len(got) == 0:
			if f.At.Before(cutoff) {
				out = append(out, Divergence{f, fmt.Sprintf("no ledger transaction (expected %d %s)", f.Amount, f.Currency)})
			}
		case len(got) > 1:
			out = append(out, Divergence{f, fmt.Sprintf("%d ledger transactions, want exactly 1", len(got))})
		case got[0].Amount != f.Amount || got[0].Currency != f.Currency:
			out = append(out, Divergence{f, fmt.Sprintf("ledger has %d %s, payments database has %d %s",
				got[0].Amount, got[0].Currency, f.Amount, f.Currency)})
		default:
			if problem := compareEntries(f, got[0].Entries); problem != "" {
				out = append(out, Divergence{f, problem})
			}
		}
	}
	for k, ps := range byKey {
		if !seen[k] {
			out = append(out, Divergence{ps[0], fmt.Sprintf("ledger transaction of %d %s has no matching row in the payments database", ps[0].Amount, ps[0].Currency)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// compareEntries compares what the ledger posted for f with the entries its
// kind's postings imply for f's parties, amount and currency, and describes
// the difference; "" when they are the same legs.
func compareEntries(f Fact, posted []ledger.Entry) string {
	d, _ := PostingsOf(f.Kind) // the caller checked that a rule posts the kind
	var want []ledger.Entry
	if d.Moves() {
		var err error
		if want, err = d.Entries(f.Parties, f.Amount, f.Currency); err != nil {
			return fmt.Sprintf("the payments database's parties (merchant %q, payer %q) cannot own the accounts of its kind's postings: %v",
				f.Parties.Merchant, f.Parties.Payer, err)
		}
	}
	if got, exp := legs(posted), legs(want); got != exp {
		return fmt.Sprintf("ledger posted %s; the postings of kind %s between merchant %q and payer %q are %s",
			got, f.Kind, f.Parties.Merchant, f.Parties.Payer, exp)
	}
	return ""
}

// legs writes entries sorted, so that two sets of legs compare as strings:
// "merchant:mer_1 -300 BRL, payer:mer_1:cus_1 +300 BRL", or "no entries".
func legs(entries []ledger.Entry) string {
	if len(entries) == 0 {
		return "no entries"
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = fmt.Sprintf("%s %+d %s", e.Account(), e.Amount(), e.Currency())
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
