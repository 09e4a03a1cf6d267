// Package ledger is the ledger's bounded context: double-entry transactions
// posted from payment events, and the balances they add up to.
//
// A Transaction is a set of entries that sums to zero in every currency: money
// only ever moves between accounts, it never appears or vanishes. A payment
// debits the payer's account and credits the merchant's; a refund moves the
// refunded amount back.
//
// Accounts form a chart (docs/LEDGER.md): each is a Role and its owners — a
// merchant's own account, or a payer as one merchant knows it — with one
// canonical name, "merchant:<merchant>" or "payer:<merchant>:<payer>", each
// part percent-encoded. A role's accounts belong to the fact's Parties: the
// event's merchant id (which the payments service takes from the API key)
// and its payer id (free text the merchant sent), so the payer id can only
// ever name an account of the merchant that sent it. Accounts come into
// being on first use.
//
// Each transaction carries two keys that make posting idempotent: the id of
// the message it came from, and its business key (payment id, kind, fact id:
// a refund's id, or nothing for the payment itself). Storage keeps both
// unique, so a replayed event can never post twice. Which kinds exist is the
// consumer's registry's business, but each declares its Postings in this
// package's words: the role whose account it debits, the role whose account
// it credits, and the kinds of fact it follows. Every transaction is built
// from that declaration, balanced, and reconciliation reads the same one.
//
// The package uses the standard library only: no SQL, no JSON, no context.
package ledger
