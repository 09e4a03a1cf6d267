package paymentstore

import (
	"context"
	"fmt"
	"time"
)

// DeleteKeysBefore deletes idempotency keys created before cutoff, at most
// limit rows per statement so that a large backlog never holds long locks,
// and returns how many it deleted. A client retrying with an expired key
// creates a new payment, so the cutoff must stay well past any client's retry
// window (SPEC: at least 24 h).
func (r *Repository) DeleteKeysBefore(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	var total int64
	for {
		tag, err := r.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE key IN (
			SELECT key FROM idempotency_keys WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, limit)
		if err != nil {
			return total, fmt.Errorf("delete expired idempotency keys: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(limit) || ctx.Err() != nil {
			return total, ctx.Err()
		}
	}
}
