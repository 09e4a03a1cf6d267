package relay

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
)

// Permanent marks err as a publish failure no retry can fix — the broker refused
// the message itself (too large, malformed), not the moment (throttling, an
// outage). The relay makes such a row DEAD at once instead of retrying it
// MaxAttempts times over the backoff; an operator fixes the cause and requeues it.
// Publishers wrap only what they know to be permanent: when in doubt, retry.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err, or an error it wraps, was marked Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Failure records one message the broker did not acknowledge.
type Failure struct {
	ID    uuid.UUID
	Error string
	// NextAttemptAt is when the message is due again; ignored for dead messages.
	NextAttemptAt time.Time
}

// BatchResult is what to write back for a claimed batch, in the claim
// transaction.
type BatchResult struct {
	PublishedAt time.Time
	Published   []uuid.UUID // acknowledged by the broker: mark PUBLISHED
	Retry       []Failure   // not acknowledged: attempts+1, last_error, next_attempt_at
	Dead        []Failure   // not acknowledged for the last time: attempts+1, DEAD
}

// Claim says which rows one ClaimBatch may take.
type Claim struct {
	Limit int // rows at most
	// Partitions is the partition count Owned refers to (an Assignment's).
	Partitions int
	// Owned are the partitions to claim from, ascending; nil claims from all
	// of them (tests and tools that run a single relay; never a replica).
	Owned []int
	// Owner is the relay whose leases Owned are: a claim reads only the
	// partitions of Owned whose lease Owner still holds by the store's
	// clock, so a stale Owned never reads a partition another replica took.
	Owner string
	// Ordered asks for ordered mode: rows in write order per partition, at
	// most one row per aggregate, none of an aggregate whose earliest
	// PENDING row is waiting for its retry, and no row skipped because
	// another claim holds it (the claim waits for it instead).
	Ordered bool
}

// Store is the outbox table, as the relay needs it.
type Store interface {
	// ClaimBatch locks up to c.Limit PENDING messages of the partitions c
	// names and calls fn with them while holding the locks. It then writes
	// the BatchResult fn returns and commits. If fn returns an error, or ctx
	// ends before the commit, the transaction rolls back and every claimed
	// row stays PENDING as it was.
	//
	// Unordered, it takes due rows, oldest due first, skipping rows other
	// transactions hold (FOR UPDATE SKIP LOCKED). Ordered, it reads the
	// first c.Limit PENDING rows in write order, locking them (waiting for
	// rows another claim holds, so no row overtakes one of its aggregate
	// still at the broker), and passes fn the first of each aggregate, when
	// it is due and the aggregate has no row waiting for a retry.
	//
	// It returns how many rows it locked: fewer than c.Limit when the
	// partitions have no more (fn is not called when none is publishable).
	ClaimBatch(ctx context.Context, c Claim, fn func([]outbox.Message) (BatchResult, error)) (int, error)

	// Heartbeat records owner as alive for ttl from now and renews the
	// leases it holds for as long, then moves it towards its FairShare of
	// the partitions among the replicas alive: it gives up the partitions
	// past its share, and takes free or expired ones up to it.
	Heartbeat(ctx context.Context, owner string, ttl time.Duration) (Assignment, error)
	// Release gives up every lease of owner and its membership, so that
	// the other replicas take its partitions at their next heartbeat
	// instead of after the leases expire.
	Release(ctx context.Context, owner string) error
}

// Publisher is the broker, as the relay needs it.
type Publisher interface {
	// Publish sends msgs and returns one error per message, in the same order:
	// nil for a message the broker acknowledged, the reason otherwise. When the
	// whole call fails every entry carries the error. It must never report nil for
	// a message it does not know to be acknowledged: that row would be marked
	// PUBLISHED and the event lost.
	Publish(ctx context.Context, msgs []outbox.Message) []error
}
