package bookkeeping

import (
	"maps"
	"testing"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// LearnType stands for a later version of the ledger that applies typ: it
// adds typ to the registry, posting a fact of kind as payment.created's data,
// until the test ends. The registry is package state, so a test that calls it
// must not run in parallel with others.
func LearnType(t *testing.T, typ string, kind ledger.Kind) {
	saved := maps.Clone(rules)
	rules[typ] = rule{kind: kind, effect: effectTransfer, direction: ledger.MerchantToPayer, decode: map[string]decoder{"1": decodeCreatedV1}}
	t.Cleanup(func() { rules = saved })
}
