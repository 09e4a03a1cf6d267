package webhookstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// claimEndpointsSQL locks the endpoints that have a due delivery and room
// under their cap, the oldest due first. The endpoint's row lock (FOR NO KEY
// UPDATE, which the fan-out's inserts do not wait for) is what makes the cap
// hold across workers and replicas: two claims never count one endpoint's
// leases at once, and SKIP LOCKED sends the second claim to other
// endpoints.
const claimEndpointsSQL = `
SELECT e.id, $2 - (SELECT count(*) FROM webhook_deliveries f
                   WHERE f.endpoint_id = e.id AND f.status = 'pending' AND f.locked_until > $1) AS room
FROM webhook_endpoints e
WHERE e.status = 'enabled' AND e.deleted_at IS NULL
  AND EXISTS (SELECT 1 FROM webhook_deliveries d
              WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= $1
                AND (d.locked_until IS NULL OR d.locked_until <= $1))
  AND (SELECT count(*) FROM webhook_deliveries f
       WHERE f.endpoint_id = e.id AND f.status = 'pending' AND f.locked_until > $1) < $2
ORDER BY (SELECT min(d.next_attempt_at) FROM webhook_deliveries d
          WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= $1
            AND (d.locked_until IS NULL OR d.locked_until <= $1))
LIMIT $3
FOR NO KEY UPDATE OF e SKIP LOCKED`

// leaseSQL leases up to $3 due deliveries of endpoint $1, the oldest due
// first, and returns what sending them needs.
const leaseSQL = `
UPDATE webhook_deliveries d SET locked_until = $4
FROM webhook_endpoints e
WHERE e.id = d.endpoint_id AND d.id IN (
	SELECT id FROM webhook_deliveries
	WHERE endpoint_id = $1 AND status = 'pending' AND next_attempt_at <= $2 AND (locked_until IS NULL OR locked_until <= $2)
	ORDER BY next_attempt_at, id
	LIMIT $3
	FOR UPDATE SKIP LOCKED)
RETURNING d.id, d.endpoint_id, d.event_id::text, d.event_type, d.payload, d.attempts, d.created_at, d.locked_until,
	e.url, e.secret_current, e.secret_previous, coalesce(e.previous_expires_at, 'epoch'), coalesce(e.failing_since, 'epoch')`

// ClaimDeliveries implements webhooks.Deliveries.
func (s *Store) ClaimDeliveries(ctx context.Context, c webhooks.DeliveryClaim) ([]webhooks.Claimed, error) {
	var out []webhooks.Claimed
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = nil
		rows, err := tx.Query(ctx, claimEndpointsSQL, c.At, c.PerEndpoint, c.Limit)
		if err != nil {
			return err
		}
		type room struct {
			id string
			n  int
		}
		var rooms []room
		for rows.Next() {
			var r room
			if err := rows.Scan(&r.id, &r.n); err != nil {
				rows.Close()
				return err
			}
			rooms = append(rooms, r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range rooms {
			if len(out) >= c.Limit {
				break
			}
			rows, err := tx.Query(ctx, leaseSQL, r.id, c.At, min(r.n, c.Limit-len(out)), c.LeaseUntil)
			if err != nil {
				return err
			}
			for rows.Next() {
				var d webhooks.Claimed
				if err := rows.Scan(&d.ID, &d.EndpointID, &d.EventID, &d.EventType, &d.Payload, &d.Attempts, &d.CreatedAt, &d.LeaseUntil,
					&d.URL, &d.Secrets.Current, &d.Secrets.Previous, &d.Secrets.PreviousExpiresAt, &d.FailingSince); err != nil {
					rows.Close()
					return err
				}
				d.CreatedAt, d.LeaseUntil = d.CreatedAt.UTC(), d.LeaseUntil.UTC()
				d.Secrets.PreviousExpiresAt, d.FailingSince = unepoch(d.Secrets.PreviousExpiresAt), unepoch(d.FailingSince)
				out = append(out, d)
			}
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", unavailable(err))
	}
	return out, nil
}

// FinishDelivery implements webhooks.Deliveries in one transaction: the
// attempt, the delivery if its lease holds, the endpoint's failing run and,
// when asked, its disabling.
func (s *Store) FinishDelivery(ctx context.Context, f webhooks.Finish) (bool, error) {
	a := f.Attempt
	var held bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var code *int
		if a.StatusCode != 0 {
			code = &a.StatusCode
		}
		var errText *string
		if a.Error != "" {
			errText = &a.Error
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO webhook_attempts (id, delivery_id, endpoint_id, attempted_at, status_code, latency_ms, error, outcome)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			a.ID, f.DeliveryID, a.EndpointID, a.AttemptedAt, code, a.Latency.Milliseconds(), errText, string(a.Outcome)); err != nil {
			return fmt.Errorf("insert attempt: %w", err)
		}
		var delivered *time.Time
		if f.Status == webhooks.DeliveryDelivered {
			delivered = &a.AttemptedAt
		}
		tag, err := tx.Exec(ctx, `
			UPDATE webhook_deliveries SET status = $3, attempts = attempts + 1, next_attempt_at = $4, locked_until = NULL,
				last_error = $5, delivered_at = $6
			WHERE id = $1 AND status = 'pending' AND locked_until = $2`,
			f.DeliveryID, f.LeaseUntil, string(f.Status), nullTime(f.NextAttemptAt), errText, delivered)
		if err != nil {
			return fmt.Errorf("update delivery: %w", err)
		}
		held = tag.RowsAffected() == 1
		if _, err := tx.Exec(ctx, `
			UPDATE webhook_endpoints SET failing_since = CASE WHEN $2 THEN NULL ELSE coalesce(failing_since, $3) END
			WHERE id = $1`, a.EndpointID, a.Outcome == webhooks.Delivered, a.AttemptedAt); err != nil {
			return fmt.Errorf("update endpoint: %w", err)
		}
		if f.Disable == "" {
			return nil
		}
		tag, err = tx.Exec(ctx, `UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $2 WHERE id = $1 AND status = 'enabled'`,
			a.EndpointID, f.Disable)
		if err != nil {
			return fmt.Errorf("disable endpoint: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		return cancelPending(ctx, tx, a.EndpointID, f.DeliveryID, "endpoint disabled: "+f.Disable)
	})
	if err != nil {
		return false, fmt.Errorf("finish webhook delivery %d: %w", f.DeliveryID, unavailable(err))
	}
	return held, nil
}

// ReleaseDelivery implements webhooks.Deliveries.
func (s *Store) ReleaseDelivery(ctx context.Context, id int64, leaseUntil time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET locked_until = NULL WHERE id = $1 AND status = 'pending' AND locked_until = $2`,
		id, leaseUntil); err != nil {
		return fmt.Errorf("release webhook delivery %d: %w", id, unavailable(err))
	}
	return nil
}

// DeliveryStats implements webhooks.Deliveries: two reads of the partial
// indexes, so their cost is the backlog's, not the history's.
func (s *Store) DeliveryStats(ctx context.Context, at time.Time, top int) (webhooks.DeliveryStats, error) {
	var st webhooks.DeliveryStats
	err := s.pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
		        WHERE d.status = 'pending' AND e.status = 'enabled' AND e.deleted_at IS NULL),
		       (SELECT count(*) FROM webhook_deliveries WHERE status = 'parked')`).Scan(&st.Pending, &st.Parked)
	if err != nil {
		return st, fmt.Errorf("count webhook deliveries: %w", unavailable(err))
	}
	rows, err := s.pool.Query(ctx, `
		SELECT d.endpoint_id, min(d.created_at) FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
		WHERE d.status = 'pending' AND e.status = 'enabled' AND e.deleted_at IS NULL
		GROUP BY d.endpoint_id ORDER BY min(d.created_at), d.endpoint_id LIMIT $1`, max(top, 1))
	if err != nil {
		return st, fmt.Errorf("webhook delivery lag: %w", unavailable(err))
	}
	for rows.Next() {
		var (
			lag    webhooks.EndpointLag
			oldest time.Time
		)
		if err := rows.Scan(&lag.EndpointID, &oldest); err != nil {
			rows.Close()
			return st, err
		}
		lag.OldestUndelivered = max(0, at.Sub(oldest))
		st.Endpoints = append(st.Endpoints, lag)
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("webhook delivery lag: %w", unavailable(err))
	}
	if len(st.Endpoints) > 0 {
		st.OldestUndelivered = st.Endpoints[0].OldestUndelivered
	}
	st.Endpoints = st.Endpoints[:min(len(st.Endpoints), top)]
	return st, nil
}

// DeleteDeliveriesBefore is the deliveries' retention.DeleteFunc: it deletes
// at most limit delivered or canceled deliveries created before cutoff,
// their attempts with them. Pending and parked deliveries are work not
// done, and stay.
func (s *Store) DeleteDeliveriesBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_deliveries WHERE id IN (
		SELECT id FROM webhook_deliveries WHERE created_at < $1 AND status IN ('delivered', 'canceled') ORDER BY created_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("delete webhook deliveries: %w", unavailable(err))
	}
	return int(tag.RowsAffected()), nil
}

// DeleteKeysBefore is the idempotency keys' retention.DeleteFunc.
func (s *Store) DeleteKeysBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_idempotency_keys WHERE (merchant_id, key) IN (
		SELECT merchant_id, key FROM webhook_idempotency_keys WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("delete webhook idempotency keys: %w", unavailable(err))
	}
	return int(tag.RowsAffected()), nil
}
