package posting

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
	rules[typ] = rule{kind: kind, direction: ledger.MerchantToPayer, decode: map[string]decoder{"1": decodeCreatedV1}}
	t.Cleanup(func() { rules = saved })
}

// IgnoreType puts typ in the ignored registry, with reason, until the test
// ends: the registry ships empty. Not in parallel with other tests, as
// LearnType.
func IgnoreType(t *testing.T, typ, reason string) {
	saved := maps.Clone(ignored)
	ignored[typ] = reason
	t.Cleanup(func() { ignored = saved })
}
