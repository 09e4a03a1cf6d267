package paymentstore

import (
	"context"
	"fmt"
	"time"

	"github.com/payments-outbox/payments-outbox/application/retention"
)

var _ retention.DeleteFunc = (*Repository)(nil).DeleteKeysBefore

// DeleteKeysBefore is the idempotency keys' retention.DeleteFunc: it deletes
// at most limit keys created before cutoff, oldest first, in one statement. A
// client retrying with an expired key creates a new payment, so the cutoff
// must stay well past any client's retry window (clients are promised at
// least 24 hours: docs/RUNBOOK.md, Retention).
func (r *Repository) DeleteKeysBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	tag, err := r.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE (merchant_id, key) IN (
		SELECT merchant_id, key FROM idempotency_keys WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("delete expired idempotency keys: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
