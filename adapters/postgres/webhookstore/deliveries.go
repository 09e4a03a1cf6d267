package webhookstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// The claim is two statements, so that its counts are exact: the first
// locks the merchants to serve, the second, whose snapshot is taken once
// the locks are granted, counts their leases and leases. Every lease of a
// merchant's deliveries is taken under its row lock, so two claims never
// count one merchant's (or one endpoint's) leases at once, across workers
// and replicas; SKIP LOCKED sends a second claim to the next merchant.
// Every count and probe reads an index range bounded by the attempts in
// flight (webhook_deliveries_leased_idx holds only leased rows; a due probe
// stops at its first unleased row): the claim's cost is the merchants'
// and their endpoints', never the backlog's.

// claimMerchantsSQL locks up to $4 merchants, but those of $5, that have a
// due delivery, room under their share ($2) and an endpoint with a due
// delivery and room under its cap ($3; one while it is timing out), the
// merchant served longest ago first: round robin. The merchants looked at
// are those with a pending delivery, found by skipping through the
// merchant index one merchant at a time (pending): a merchant with nothing
// to send costs nothing, however many there are. What it counts is a first
// look, from a snapshot that may predate another claim's commit;
// claimLeasesSQL counts again, under the lock. Each probe is a scalar
// subquery that takes the first row in its index's order (ORDER BY …
// LIMIT 1), never an EXISTS: the planner turns an EXISTS into a join, which
// a prepared statement's generic plan reads through every due delivery,
// the whole backlog, as soon as the merchants are few.
const claimMerchantsSQL = `
WITH RECURSIVE pending (merchant_id) AS (
	(SELECT merchant_id FROM webhook_deliveries WHERE status = 'pending' ORDER BY merchant_id LIMIT 1)
	UNION ALL
	SELECT (SELECT d.merchant_id FROM webhook_deliveries d
	        WHERE d.status = 'pending' AND d.merchant_id > p.merchant_id ORDER BY d.merchant_id LIMIT 1)
	FROM pending p WHERE p.merchant_id IS NOT NULL
)
SELECT m.merchant_id
FROM webhook_merchants m JOIN pending p ON p.merchant_id = m.merchant_id
WHERE m.merchant_id <> ALL($5::text[])
  AND (SELECT d.id FROM webhook_deliveries d
       WHERE d.merchant_id = m.merchant_id AND d.status = 'pending' AND d.next_attempt_at <= $1
         AND (d.locked_until IS NULL OR d.locked_until <= $1)
       ORDER BY d.next_attempt_at LIMIT 1) IS NOT NULL
  AND (SELECT count(*) FROM webhook_deliveries f
       WHERE f.merchant_id = m.merchant_id AND f.status = 'pending' AND f.locked_until > $1) < $2
  AND (SELECT e.id FROM webhook_endpoints e
       WHERE e.merchant_id = m.merchant_id AND e.status = 'enabled' AND e.deleted_at IS NULL
         AND (SELECT count(*) FROM webhook_deliveries f
              WHERE f.merchant_id = m.merchant_id AND f.endpoint_id = e.id AND f.status = 'pending' AND f.locked_until > $1)
             < CASE WHEN e.timeouts > 0 THEN 1 ELSE $3 END
         AND (SELECT d.id FROM webhook_deliveries d
              WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= $1
                AND (d.locked_until IS NULL OR d.locked_until <= $1)
              ORDER BY d.next_attempt_at, d.id LIMIT 1) IS NOT NULL
       LIMIT 1) IS NOT NULL
ORDER BY m.served, m.merchant_id
LIMIT $4
FOR NO KEY UPDATE OF m SKIP LOCKED`

// claimLeasesSQL leases up to $5 due deliveries of merchant $1 (locked),
// within its share ($2) and each endpoint's cap ($3, or one while it is
// timing out), the oldest due first, and moves the merchant to the back of
// the turn if it leased any. No other claim leases the merchant's
// deliveries meanwhile (its row is locked); a delivery canceled or
// finished meanwhile is left alone (d.status is checked again).
const claimLeasesSQL = `
WITH share AS (
	SELECT $2::int - count(*) AS room FROM webhook_deliveries
	WHERE merchant_id = $1 AND status = 'pending' AND locked_until > $4
), endpoints AS (
	SELECT e.id, CASE WHEN e.timeouts > 0 THEN 1 ELSE $3::int END
		- (SELECT count(*) FROM webhook_deliveries f
		   WHERE f.merchant_id = $1 AND f.endpoint_id = e.id AND f.status = 'pending' AND f.locked_until > $4) AS room
	FROM webhook_endpoints e
	WHERE e.merchant_id = $1 AND e.status = 'enabled' AND e.deleted_at IS NULL
), picked AS (
	SELECT c.id FROM endpoints en
	CROSS JOIN LATERAL (
		SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
		WHERE d.endpoint_id = en.id AND d.status = 'pending' AND d.next_attempt_at <= $4
		  AND (d.locked_until IS NULL OR d.locked_until <= $4)
		ORDER BY d.next_attempt_at, d.id
		LIMIT greatest(en.room, 0)) c
	ORDER BY c.next_attempt_at, c.id
	LIMIT greatest(least((SELECT room FROM share), $5::int), 0)
), served AS (
	UPDATE webhook_merchants SET served = nextval('webhook_merchants_served_seq')
	WHERE merchant_id = $1 AND EXISTS (SELECT 1 FROM picked)
)
UPDATE webhook_deliveries d SET locked_until = $6
FROM webhook_endpoints e
WHERE d.id = ANY(ARRAY(SELECT id FROM picked)) AND e.id = d.endpoint_id AND d.status = 'pending'
RETURNING d.id, d.endpoint_id, d.event_id::text, d.event_type, d.payload, d.attempts, d.created_at, d.locked_until, d.next_attempt_at,
	e.url, e.secret_current, e.secret_previous, coalesce(e.previous_expires_at, 'epoch'), coalesce(e.failing_since, 'epoch'), e.timeouts`

// claimRounds bounds how many times a claim looks for merchants: the
// first look may find room the exact count does not (another claim took
// it meanwhile), and then the claim looks again, past the merchants it
// locked already. Each round locks no more merchants than the claim still
// needs, so concurrent claims skip as few as they can.
const claimRounds = 3

// ClaimDeliveries implements webhooks.Deliveries.
func (s *Store) ClaimDeliveries(ctx context.Context, c webhooks.DeliveryClaim) ([]webhooks.Claimed, error) {
	var out []webhooks.Claimed
	err := postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
		out = nil
		tried := []string{} // not nil: NULL would match no merchant
		for round := 0; round < claimRounds && len(out) < c.Limit; round++ {
			var merchants []string
			var err error
			if round == 0 {
				merchants, err = firstLook(ctx, tx, c, tried)
			} else {
				var rows pgx.Rows
				if rows, err = tx.Query(ctx, claimMerchantsSQL, c.At, c.PerMerchant, c.PerEndpoint, c.Limit-len(out), tried); err == nil {
					merchants, err = pgx.CollectRows(rows, pgx.RowTo[string])
				}
			}
			if err != nil || len(merchants) == 0 {
				return err
			}
			tried = append(tried, merchants...)
			if err := s.lease(ctx, tx, c, merchants, &out); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", postgres.Unavailable(err))
	}
	return out, nil
}

// claimSettings run the claim's statements on their generic plans, without
// JIT, in its transaction only. The statements cost more to plan than to
// run — the planner proves every partial index of webhook_deliveries for
// each of their reads — and with the parameters known, Postgres kept
// planning them anew at each execution, several times the cost of running
// them. Their generic plans probe the indexes one merchant and one endpoint
// at a time, the plans whose cost does not grow with the backlog; but a
// generic plan's estimates are the table's, not the merchant's, high enough
// to have each execution JIT-compiled, tens of milliseconds for a statement
// that runs in one.
const claimSettings = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('jit', 'off', true)`

// firstLook applies claimSettings and runs claimMerchantsSQL in one round
// trip.
func firstLook(ctx context.Context, tx *postgres.Tx, c webhooks.DeliveryClaim, tried []string) ([]string, error) {
	b := &pgx.Batch{}
	b.Queue(claimSettings)
	b.Queue(claimMerchantsSQL, c.At, c.PerMerchant, c.PerEndpoint, c.Limit, tried)
	br := tx.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	merchants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		br.Close()
		return nil, err
	}
	return merchants, br.Close()
}

// lease leases, for each of merchants (locked) in turn, what claimLeasesSQL
// finds, until c.Limit are leased in all, appending them to out.
func (s *Store) lease(ctx context.Context, tx *postgres.Tx, c webhooks.DeliveryClaim, merchants []string, out *[]webhooks.Claimed) error {
	for _, m := range merchants {
		if len(*out) >= c.Limit {
			return nil
		}
		rows, err := tx.Query(ctx, claimLeasesSQL, m, c.PerMerchant, c.PerEndpoint, c.At, c.Limit-len(*out), c.LeaseUntil)
		if err != nil {
			return err
		}
		type leased struct {
			webhooks.Claimed
			due time.Time
		}
		var got []leased
		for rows.Next() {
			var (
				d    webhooks.Claimed
				next time.Time
			)
			if err := rows.Scan(&d.ID, &d.EndpointID, &d.EventID, &d.EventType, &d.Payload, &d.Attempts, &d.CreatedAt, &d.LeaseUntil, &next,
				&d.URL, &d.Secrets.Current, &d.Secrets.Previous, &d.Secrets.PreviousExpiresAt, &d.FailingSince, &d.Timeouts); err != nil {
				rows.Close()
				return err
			}
			d.CreatedAt, d.LeaseUntil = d.CreatedAt.UTC(), d.LeaseUntil.UTC()
			d.Secrets.PreviousExpiresAt, d.FailingSince = unepoch(d.Secrets.PreviousExpiresAt), unepoch(d.FailingSince)
			got = append(got, leased{d, next})
		}
		if err := rows.Err(); err != nil {
			return err
		}
		// RETURNING keeps no order: the oldest due first, as leased.
		slices.SortFunc(got, func(a, b leased) int { return cmp.Or(a.due.Compare(b.due), cmp.Compare(a.ID, b.ID)) })
		for _, l := range got {
			*out = append(*out, l.Claimed)
		}
	}
	return nil
}

// FinishDelivery implements webhooks.Deliveries in one transaction: the
// attempt, the delivery if its lease holds, the endpoint's failing run and,
// when asked, its disabling.
func (s *Store) FinishDelivery(ctx context.Context, f webhooks.Finish) (bool, error) {
	a := f.Attempt
	var held bool
	err := postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
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
			UPDATE webhook_endpoints SET failing_since = CASE WHEN $2 THEN NULL ELSE coalesce(failing_since, $3) END,
				timeouts = CASE WHEN $4 THEN timeouts + 1 WHEN $5 THEN 0 ELSE timeouts END
			WHERE id = $1`, a.EndpointID, a.Outcome == webhooks.Delivered, a.AttemptedAt, f.TimedOut, a.StatusCode != 0); err != nil {
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
		return false, fmt.Errorf("finish webhook delivery %d: %w", f.DeliveryID, postgres.Unavailable(err))
	}
	return held, nil
}

// ReleaseDelivery implements webhooks.Deliveries.
func (s *Store) ReleaseDelivery(ctx context.Context, id int64, leaseUntil time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET locked_until = NULL WHERE id = $1 AND status = 'pending' AND locked_until = $2`,
		id, leaseUntil); err != nil {
		return fmt.Errorf("release webhook delivery %d: %w", id, postgres.Unavailable(err))
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
		return st, fmt.Errorf("count webhook deliveries: %w", postgres.Unavailable(err))
	}
	rows, err := s.pool.Query(ctx, `
		SELECT d.endpoint_id, min(d.created_at) FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
		WHERE d.status = 'pending' AND e.status = 'enabled' AND e.deleted_at IS NULL
		GROUP BY d.endpoint_id ORDER BY min(d.created_at), d.endpoint_id LIMIT $1`, max(top, 1))
	if err != nil {
		return st, fmt.Errorf("webhook delivery lag: %w", postgres.Unavailable(err))
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
		return st, fmt.Errorf("webhook delivery lag: %w", postgres.Unavailable(err))
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
		return 0, fmt.Errorf("delete webhook deliveries: %w", postgres.Unavailable(err))
	}
	return int(tag.RowsAffected()), nil
}

// DeleteKeysBefore is the idempotency keys' retention.DeleteFunc.
func (s *Store) DeleteKeysBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_idempotency_keys WHERE (merchant_id, key) IN (
		SELECT merchant_id, key FROM webhook_idempotency_keys WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("delete webhook idempotency keys: %w", postgres.Unavailable(err))
	}
	return int(tag.RowsAffected()), nil
}
