// Package ledger is the ledger's bounded context: double-entry transactions
// posted from payment events, and the balances they add up to.
//
// A Transaction is a set of entries that sums to zero in every currency: money
// only ever moves between accounts, it never appears or vanishes. A payment
// debits the payer's account and credits the merchant's; a refund moves the
// refunded amount back. Accounts are the payer and merchant ids exactly as the
// payments service sends them and come into being on first use.
//
// Each transaction carries two keys that make posting idempotent: the id of
// the message it came from, and its business key (payment id, kind, fact id:
// a refund's id, or nothing for the payment itself). Storage keeps both
// unique, so a replayed event can never post twice. Which kinds exist, and
// which way each moves money, is the consumer's registry's business; this
// package offers the posting rules (Direction) and keeps every transaction
// balanced.
//
// The package uses the standard library only: no SQL, no JSON, no context.
package ledger
