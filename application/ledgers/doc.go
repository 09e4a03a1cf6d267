// Package ledgers holds the ledger service's use cases: posting each
// event the ledger applies as a balanced double-entry transaction (Handler,
// the ledger's handler of the shared inbox, with its registry of posting
// rules in events.go), answering balance and entry queries (Service), and
// reconciling the ledger against the payments database (Reconciler).
//
// The name is the ledger service's, as application/payments is the
// payments service's beside domain/payment; the domain's vocabulary
// (accounts, transactions, balances) is domain/ledger, so the two read side
// by side without an import alias: ledgers.Handler posts a
// ledger.Transaction.
//
// Receiving a message, deduplicating it, recording it in the inbox,
// retrying and parking it is the inbox's business (application/inbox),
// shared with every consumer of the events; this package is what differs:
// which event types the ledger posts and what posting one writes. The
// ledger's tables are written in the same database transaction as the
// message's inbox row, through the Ledger repository the inbox's
// transaction hands the handler.
//
// Idempotency has two layers, as in the inbox pattern: the inbox row keyed by
// the message id absorbs redeliveries; and the ledger's own unique business
// key (payment, kind, fact id) rejects the same fact arriving under another
// message id.
//
// The package declares the ports it needs (Ledger for the inbox's
// transaction, Reader for the queries, and the two reconciliation sources);
// the Postgres adapter in adapters/postgres/ledgerstore implements them, and
// the tests here use the in-memory fakes of ledgerstest.
package ledgers
