package postgres

import (
	"context"
	"fmt"

	"github.com/payments-outbox/payments-outbox/application/idempotency"
)

// LockKey makes key tx's for the rest of tx, or returns
// idempotency.ErrKeyInFlight at once when another transaction holds it: a
// twin of a request still running is refused, never made to wait
// (application/idempotency says why). Every store takes it first, before
// it reads the key: once held, any twin has committed or rolled back, and
// the read sees its row.
//
// The lock is a transaction-scoped advisory lock on a 64-bit hash of the
// key's merchant and itself. Two pairs that collide — about one chance in
// 2^64 for two requests in flight at once — cost the later one a 409 its
// retry gets past; they never share a row, whose primary key is the pair.
func LockKey(ctx context.Context, tx *Tx, key *idempotency.Key) error {
	var locked bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 7231))`, key.Scoped()).Scan(&locked); err != nil {
		return fmt.Errorf("lock idempotency key: %w", err)
	}
	if !locked {
		return fmt.Errorf("%w: %s", idempotency.ErrKeyInFlight, key.Key)
	}
	return nil
}
