package inbox

import (
	"context"
	"time"
)

// Handler is the one thing a consumer of the events writes: which event
// types it applies and what applying one writes. The inbox does the rest,
// the same for every consumer — decode and identify the message, refuse
// poison before anything is written, record it (applied at once in the sync
// mode, pending in the async one), absorb redeliveries, keep the types the
// consumer does not know, retry with backoff and park what can never apply.
//
// R is the consumer's repositories bound to one transaction of its database,
// the one that writes the message's inbox row (the ledger's: its ledger
// tables); E is an event checked and ready to apply (the ledger's: the
// transaction it posts).
type Handler[R, E any] interface {
	// Types maps each event type the consumer applies to the versions of
	// its data it decodes. The inbox claims and applies only these types; a
	// message of any other type is recorded, unapplied, for a version that
	// applies it. An event of one of these types at another data version is
	// refused as invalid before any schema is asked.
	Types() map[string][]string
	// Ignored maps each event type the consumer deliberately never applies
	// to the reason the inbox records on its row, which is then done: a
	// decision, not a gap waiting for a version that applies it.
	Ignored() map[string]string
	// Check turns ev, whose data is at version, into what Apply applies,
	// before anything is written. The inbox has checked the envelope, the
	// version, the event's time and data and ev against its schemas. An
	// error means the event can never apply: the inbox wraps it in
	// ErrInvalidEvent, writes nothing, and leaves the message for the DLQ.
	Check(ev Event, version string) (E, error)
	// Compare orders the events of one claimed batch, which the processor
	// applies in one transaction: in this order, batches committing side by
	// side take the rows they share in the same order and never deadlock.
	// It returns 0 when the order does not matter.
	Compare(a, b E) int
	// Apply writes e with repos, the consumer's repositories inside the
	// transaction that records or settles the message's inbox row: the row
	// and what Apply writes commit together or not at all. at is when the
	// inbox applies it, the time it records on the row. It reports false,
	// having written nothing, when e's effect is already there under another
	// message id (the consumer's own business key: the second layer of
	// idempotency). An error rolls back Apply's writes; whether the message
	// is retried or parked follows from it (ErrPermanent).
	Apply(ctx context.Context, repos R, e E, at time.Time) (bool, error)
}
