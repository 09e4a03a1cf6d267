package inbox

import (
	"context"
	"errors"
	"time"
)

// PendingMessage is an inbox row the processor claimed: recorded, not yet
// applied, not parked, and due.
type PendingMessage struct {
	ID         string
	Type       string
	Payload    []byte
	ReceivedAt time.Time
	Attempts   int // failed attempts so far
}

// Claim says which pending rows to lock.
type Claim struct {
	Limit int
	// Types are the event types this version applies: a row of any other
	// type stays pending, untouched, for a version that knows it.
	Types []string
	// IDs, when set, restricts the claim to these rows (still only if they
	// are pending, due and not locked): the processor retries a batch whose
	// commit failed one row at a time.
	IDs []string
}

// Processed is a row applied (or found already applied) in the claim
// transaction.
type Processed struct {
	ID   string
	Note string // written to the error column, e.g. that the business key was already applied; "" clears it
}

// Failure is a row whose attempt failed: what to write back.
type Failure struct {
	ID       string
	Error    string
	Attempts int // failed attempts including this one
	// NextAttemptAt is when the row is due again; ignored for a parked row.
	NextAttemptAt time.Time
}

// BatchResult is what to write back for a claimed batch, in its transaction.
type BatchResult struct {
	At        time.Time
	Processed []Processed // processed_at = At, error = note
	Retry     []Failure   // attempts, error, next_attempt_at
	Parked    []Failure   // attempts, error, parked_at = At: out of the claims
}

// ApplyFunc runs fn with the consumer's repositories of the claim
// transaction inside a savepoint: when fn fails, only fn's writes are rolled
// back and the batch goes on. A failure the database defers to COMMIT (a
// deferred constraint) cannot be seen here; it fails the whole batch's
// commit instead. ev is the claimed row's event, which fn applies: the store
// needs nothing of it, and a decorator may describe the work with it (the
// tracing continues the trace the event carries).
type ApplyFunc[R any] func(ctx context.Context, ev Event, fn func(ctx context.Context, repos R) error) error

// Backlog is the inbox's pending rows, as the processor claims them.
type Backlog[R any] interface {
	// ClaimPending begins a transaction, locks up to c.Limit rows that are
	// not processed, not parked, due (next attempt now or past) and of a type
	// in c.Types — oldest received first, skipping rows other transactions
	// hold (FOR UPDATE SKIP LOCKED) — and calls fn with them. It then writes
	// the BatchResult fn returns and commits. It returns how many rows it
	// claimed (0 when none: fn is not called). When fn returns an error, ctx
	// ends, or the commit fails, everything rolls back: every claimed row is
	// as it was, its lock released. A commit the database refuses for good
	// wraps ErrPermanent.
	ClaimPending(ctx context.Context, c Claim, fn func(ctx context.Context, rows []PendingMessage, apply ApplyFunc[R]) (BatchResult, error)) (int, error)
}

// Stats is a snapshot of the inbox's backlog: what a service's `inbox
// stats` prints and the gauges export.
type Stats struct {
	// Pending rows of a type this version applies, due or waiting for a retry.
	Pending int64
	// OldestPending is the age of the oldest of them, on the database's
	// clock; 0 when none. It grows whenever the processor stops keeping up.
	OldestPending time.Duration
	// Unhandled rows are pending rows of a type this version does not apply:
	// kept for a version that does, until their window ends
	// (Processor.ExpireUnhandled). Not a backlog this version can drain.
	Unhandled int64
	// Parked rows ran out of attempts or can never apply; the service's
	// `inbox retry` puts them back.
	Parked int64
}

// Admin is what the operator's commands, the gauges and the expiry of
// unhandled rows need.
type Admin interface {
	// InboxStats counts the backlog; types are the types this version applies.
	InboxStats(ctx context.Context, types []string) (Stats, error)
	// DeleteUnhandled deletes at most limit unhandled rows received before
	// cutoff — pending, not parked, of a type not in types (the types this
	// version applies) — skipping any row another transaction holds (a
	// processor of a version that applies its type), and returns how many it
	// deleted, in one statement. A processed row, a parked row and a row of a
	// type in types are never deleted.
	DeleteUnhandled(ctx context.Context, types []string, cutoff time.Time, limit int) (int, error)
	// Retry makes the parked rows among ids (all parked rows when ids is nil)
	// pending and due again with their attempts reset, and returns how many
	// it changed. The last error stays on each row until it is applied.
	// Errors: ErrUnknownMessage when ids named no parked row.
	Retry(ctx context.Context, ids []string) (int, error)
}

// ErrUnknownMessage means `inbox retry --id` named no parked row.
var ErrUnknownMessage = errors.New("no parked inbox message with that id")
