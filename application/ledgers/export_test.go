package ledgers

import (
	"maps"
	"testing"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// LearnType stands for a later version of the ledger that applies typ: it
// adds typ to the registry, posting a fact of kind as payment.created's data,
// merchant to payer, until the test ends. The registry is package state, so a
// test that calls it must not run in parallel with others.
func LearnType(t *testing.T, typ string, kind ledger.Kind) {
	learn(t, typ, rule{postings: ledger.Postings{Kind: kind, Debit: ledger.RoleMerchant, Credit: ledger.RolePayer},
		effect: effectTransfer, decode: map[string]decoder{"1": decodeCreatedV1}})
}

// LearnPostings adds typ to the registry as LearnType does, a plain
// transfer posted by d: its data is payment.refunded's, whose refund_id is
// the fact id.
func LearnPostings(t *testing.T, typ string, d ledger.Postings) {
	learn(t, typ, rule{postings: d, effect: effectTransfer, decode: map[string]decoder{"1": decodeRefundedV1}})
}

func learn(t *testing.T, typ string, r rule) {
	saved := maps.Clone(rules)
	rules[typ] = r
	t.Cleanup(func() { rules = saved })
}
