// Package posting holds the ledger service's use cases: apply one broker
// message through the inbox (Apply, the sync mode) or only record it there
// (Record, the async mode), apply recorded messages later (Processor), answer
// balance and entry queries, check the inbox's retention against the
// broker's, bound what the inbox keeps of types this version does not apply
// (MaxUnhandledSize, ExpireUnhandled), and reconcile the ledger against the
// payments database. (The loop that deletes expired inbox rows is
// application/retention's.)
//
// The package declares the ports it needs (Transactor and the Repos it hands
// to a transaction, Reader, Backlog and InboxAdmin for the processor and the
// operator, and the two reconciliation sources); the
// Postgres adapter in adapters/postgres/ledgerstore implements them, and the
// tests here use hand-written in-memory fakes. Nothing here knows about SQS,
// HTTP or SQL: the SQS adapter passes a message body to Service.Apply and
// decides from the result and the error whether to acknowledge it.
//
// Idempotency has two layers, as in the inbox pattern: the inbox row keyed by
// the message id, inserted in the same database transaction as the ledger
// rows, absorbs redeliveries; and the ledger's own unique business key (payment,
// kind, fact id) rejects the same fact arriving under another message id.
//
// Which event types the ledger posts, and how, is one registry (events.go):
// per type, the data versions it accepts, how each is decoded and checked,
// the kind of fact it posts and which way the money moves.
package posting
