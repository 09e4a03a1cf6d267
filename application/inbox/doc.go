// Package inbox is the consuming side of the inbox pattern, shared by every
// service that consumes the payments events: the ledger today, and any
// other consumer (a webhooks service) with a handler of its own. It owns
// what every consumer must get right, so that none writes it twice:
//
//   - one decode: a message body becomes an identified Event in one place
//     (Decode), the broker's consumer, the processor and the tracing of its
//     work all reading that;
//   - receiving (Service.Receive): refuse what can never apply before
//     anything is written (so it reaches the DLQ), record the message in the
//     inbox keyed by its id (the first layer of idempotency), and in the sync
//     mode apply it in the same transaction; in the async mode (Config.Mode)
//     record it pending and wake the processor;
//   - the Processor: claim pending rows, apply each in a savepoint, retry
//     with backoff, park after MaxAttempts or at once when a retry would
//     repeat the refusal (ErrPermanent), and replay the types a later
//     version learned;
//   - the rules that bound what the inbox keeps: its retention against the
//     broker's redelivery window (CheckRetention), and the cap and window of
//     the types no version applies yet (MaxUnhandledSize,
//     Processor.ExpireUnhandled);
//   - the operator's view: stats, gauges, retry of parked rows (Admin).
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
