package ledgerstore

import (
	"slices"
	"testing"

	"github.com/payments-outbox/payments-outbox/application/posting"
)

// TestEveryKindIsReconciled names the place a new kind of fact was forgotten:
// without a payments-side query, `ledger reconcile` would report every
// transaction of that kind as having no matching row.
func TestEveryKindIsReconciled(t *testing.T) {
	for _, k := range posting.Kinds() {
		if _, ok := paymentFacts[k]; !ok {
			t.Errorf("the ledger posts facts of kind %q but reconcile cannot read them from the payments database: add a query to paymentFacts in adapters/postgres/ledgerstore/payments.go", k)
		}
	}
	for k := range paymentFacts {
		if !slices.Contains(posting.Kinds(), k) {
			t.Errorf("paymentFacts reads kind %q, which no event type in the consumer's registry posts", k)
		}
	}
}
