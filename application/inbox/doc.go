// Package inbox is the consuming side of the inbox pattern, shared by every
// service that consumes the payments events: the ledger and the webhooks
// service each bring a Handler of their own, and the inbox owns what every
// consumer must get right, so that none writes it twice.
//
// Read it in this order:
//
//   - inbox.go, the sync path, whole: Inbox.Receive decodes a message,
//     refuses what can never apply before anything is written (so it
//     reaches the DLQ), and in one transaction records it in the inbox
//     keyed by its id (INSERT … ON CONFLICT DO NOTHING: the first layer of
//     idempotency) and applies it with the handler; the broker acknowledges
//     it after the commit. handler.go is what a consumer writes (Handler)
//     and the checks every message passes; ports.go the store's port
//     (Recorder) and what Receive returns; event.go the one decode of a
//     message body into an identified Event.
//   - What wraps the sync path, a file each, assembled by NewService
//     (service.go): unhandled.go records the types the handler does not
//     apply instead of refusing them, within a cap and a window; park.go
//     records a message the database refuses for good parked, instead of
//     leaving it to be redelivered until the DLQ; async.go is the async
//     mode's receive, which records a message pending, and processor.go the
//     Processor that applies pending rows later: claim, apply each in a
//     savepoint, retry with backoff, park after MaxAttempts or at once when a
//     retry would repeat the refusal (ErrPermanent), and replay the types a
//     later version learned (backlog.go is its port).
//   - The rules that bound what the inbox keeps: its retention against the
//     broker's redelivery window (retention.go), and the cap and window of
//     the types no version applies yet (unhandled.go); the operator's view:
//     stats, gauges, retry of parked rows (Admin, backlog.go).
//
// What differs by consumer is its Handler: the event types it applies, how
// it checks one before anything is written, and what applying one writes
// with its own repositories. Those repositories (R) are written in the same
// database transaction as the message's inbox row: the Recorder and the
// Backlog hand the handler its repositories bound to that transaction, so an
// inbox row exists if and only if its message's writes do. The consumer's
// own business key is the second layer of idempotency: a fact that arrives
// again under another message id applies nothing (Duplicate).
//
// The package declares the ports it uses; adapters/postgres/inboxstore
// implements the inbox's side of them for any consumer, and the tests here
// use the in-memory fakes of inbox/inboxtest. Nothing here knows about SQS,
// HTTP or SQL.
package inbox
