// Package webhookstore is the webhooks service's Postgres adapter: the
// shared inbox (inboxstore) with the fan-out bound to its transactions and
// savepoints, the merchant API's endpoints, and the delivery workers'
// claims, attempts and leases. It starts no span and counts nothing: the
// SQL reads as SQL. Every outage is wrapped in dependency.ErrUnavailable, by
// postgres.Unavailable.
package webhookstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/inboxstore"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/retention"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// Store implements the webhooks service's ports on its database.
type Store struct {
	*inboxstore.Store[webhooks.Fanout]
	pool *pgxpool.Pool
}

var (
	_ inbox.Recorder[webhooks.Fanout] = (*Store)(nil)
	_ inbox.Backlog[webhooks.Fanout]  = (*Store)(nil)
	_ inbox.Admin                     = (*Store)(nil)
	_ webhooks.Endpoints              = (*Store)(nil)
	_ webhooks.Deliveries             = (*Store)(nil)

	_ retention.DeleteFunc = (*Store)(nil).DeleteDeliveriesBefore
	_ retention.DeleteFunc = (*Store)(nil).DeleteKeysBefore
)

// New returns a Store on pool, a pool on the migrated webhooks database.
func New(pool *pgxpool.Pool) *Store {
	return &Store{Store: inboxstore.New(pool, func(tx inboxstore.Tx) webhooks.Fanout { return fanout{tx} }), pool: pool}
}

// Ping reports whether the database answers; /readyz uses it.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// fanout is the handler's repository inside the inbox row's transaction.
type fanout struct{ tx inboxstore.Tx }

// enqueueSQL writes one delivery per subscribed endpoint of the merchant in
// one statement; the unique (endpoint, event) pair skips those written.
const enqueueSQL = `
INSERT INTO webhook_deliveries (endpoint_id, merchant_id, event_id, event_type, payload, created_at, next_attempt_at)
SELECT e.id, e.merchant_id, $2, $3, $4, $5, $5
FROM webhook_endpoints e
WHERE e.merchant_id = $1 AND e.status = 'enabled' AND e.deleted_at IS NULL
  AND ($3 = ANY(e.enabled_events) OR '*' = ANY(e.enabled_events))
ORDER BY e.id
ON CONFLICT (endpoint_id, event_id) DO NOTHING`

// Enqueue implements webhooks.Fanout.
func (f fanout) Enqueue(ctx context.Context, d webhooks.NewDelivery) (int, error) {
	tag, err := f.tx.Exec(ctx, enqueueSQL, d.MerchantID, d.EventID, d.EventType, d.Payload, d.At)
	if err != nil {
		return 0, fmt.Errorf("fan out event %s: %w", d.EventID, postgres.Unavailable(err))
	}
	return int(tag.RowsAffected()), nil
}

const endpointColumns = `e.id, e.merchant_id, e.url, e.description, e.enabled_events, e.status, coalesce(e.disabled_reason, ''),
	e.created_at, coalesce(e.deleted_at, 'epoch'), e.secret_current, e.secret_previous, coalesce(e.previous_expires_at, 'epoch'),
	coalesce(e.failing_since, 'epoch'), e.timeouts`

var epoch = time.Unix(0, 0).UTC()

func unepoch(t time.Time) time.Time {
	if t.Equal(epoch) {
		return time.Time{}
	}
	return t.UTC()
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func scanEndpoint(row pgx.Row) (webhooks.StoredEndpoint, error) {
	var (
		e      webhooks.StoredEndpoint
		status string
	)
	err := row.Scan(&e.ID, &e.MerchantID, &e.URL, &e.Description, &e.EnabledEvents, &status, &e.DisabledReason,
		&e.CreatedAt, &e.DeletedAt, &e.Secrets.Current, &e.Secrets.Previous, &e.Secrets.PreviousExpiresAt, &e.FailingSince, &e.Timeouts)
	e.Status = webhooks.EndpointStatus(status)
	e.CreatedAt, e.DeletedAt, e.FailingSince = e.CreatedAt.UTC(), unepoch(e.DeletedAt), unepoch(e.FailingSince)
	e.Secrets.PreviousExpiresAt = unepoch(e.Secrets.PreviousExpiresAt)
	return e, err
}

// Create implements webhooks.Endpoints. The key, locked first
// (postgres.LockKey: a twin in flight is refused), is looked up: a retry
// finds the first request's. The merchant's row, locked next, serialises its
// creations: under it the endpoints are counted against max, and the
// endpoint and its key inserted.
func (s *Store) Create(ctx context.Context, e webhooks.StoredEndpoint, key *idempotency.Key, max int) (webhooks.CreateResult, error) {
	var (
		res      webhooks.CreateResult
		replayed string
	)
	err := postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
		if key != nil {
			if err := postgres.LockKey(ctx, tx, key); err != nil {
				return err
			}
			found, err := storedKey(ctx, tx, key)
			if err != nil || found != "" {
				replayed = found
				return err
			}
		}
		if err := lockMerchant(ctx, tx, e.MerchantID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM webhook_endpoints WHERE merchant_id = $1 AND deleted_at IS NULL LIMIT $2) e`,
			e.MerchantID, max).Scan(&n); err != nil {
			return fmt.Errorf("count webhook endpoints: %w", err)
		}
		if n >= max {
			return fmt.Errorf("%w: %d of %s", webhooks.ErrTooManyEndpoints, n, e.MerchantID)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO webhook_endpoints (id, merchant_id, url, description, enabled_events, status, secret_current, created_at)
			VALUES ($1, $2, $3, $4, $5, 'enabled', $6, $7)`,
			e.ID, e.MerchantID, e.URL, e.Description, e.EnabledEvents, e.Secrets.Current, e.CreatedAt); err != nil {
			return fmt.Errorf("insert webhook endpoint: %w", err)
		}
		if key != nil {
			if _, err := tx.Exec(ctx, `
				INSERT INTO webhook_idempotency_keys (merchant_id, key, fingerprint, endpoint_id, created_at) VALUES ($1, $2, $3, $4, $5)`,
				key.Merchant, key.Key, key.Fingerprint, e.ID, e.CreatedAt); err != nil {
				return fmt.Errorf("insert idempotency key: %w", err)
			}
		}
		res = webhooks.CreateResult{Endpoint: e}
		return nil
	})
	if err != nil {
		return webhooks.CreateResult{}, postgres.Unavailable(err)
	}
	if replayed != "" {
		found, err := s.Endpoint(ctx, replayed)
		return webhooks.CreateResult{Endpoint: found, Replayed: true}, err
	}
	return res, nil
}

// lockMerchant locks merchant's row, making it if it is the merchant's
// first endpoint. FOR NO KEY UPDATE: what the claim takes, SKIP LOCKED.
func lockMerchant(ctx context.Context, tx *postgres.Tx, merchant string) error {
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_merchants (merchant_id) VALUES ($1) ON CONFLICT (merchant_id) DO NOTHING`, merchant); err != nil {
		return fmt.Errorf("insert webhook merchant: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM webhook_merchants WHERE merchant_id = $1 FOR NO KEY UPDATE`, merchant); err != nil {
		return fmt.Errorf("lock webhook merchant: %w", err)
	}
	return nil
}

// storedKey returns the endpoint of key if it is stored with the same
// fingerprint, "" if it is not stored. Errors: ErrKeyReused.
func storedKey(ctx context.Context, tx *postgres.Tx, key *idempotency.Key) (string, error) {
	var fingerprint, id string
	err := tx.QueryRow(ctx, `SELECT fingerprint, endpoint_id FROM webhook_idempotency_keys WHERE merchant_id = $1 AND key = $2`,
		key.Merchant, key.Key).Scan(&fingerprint, &id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read idempotency key: %w", err)
	case fingerprint != key.Fingerprint:
		return "", fmt.Errorf("%w: %s", idempotency.ErrKeyReused, key.Key)
	}
	return id, nil
}

// Endpoint implements webhooks.Endpoints.
func (s *Store) Endpoint(ctx context.Context, id string) (webhooks.StoredEndpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints e WHERE e.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return webhooks.StoredEndpoint{}, fmt.Errorf("%w: %s", webhooks.ErrEndpointNotFound, id)
	}
	if err != nil {
		return webhooks.StoredEndpoint{}, fmt.Errorf("read webhook endpoint: %w", postgres.Unavailable(err))
	}
	return e, nil
}

// ListEndpoints implements webhooks.Endpoints: a keyset read in the order
// of the list's index; a page before a cursor is read oldest first and
// turned around.
func (s *Store) ListEndpoints(ctx context.Context, q webhooks.EndpointQuery) ([]webhooks.StoredEndpoint, error) {
	where, args := `e.deleted_at IS NULL AND ($1 = '' OR e.merchant_id = $1)`, []any{q.MerchantID, q.Limit}
	order := `e.created_at DESC, e.id DESC`
	switch {
	case q.After != nil:
		where += ` AND (e.created_at, e.id) < ($3, $4)`
		args = append(args, q.After.CreatedAt, q.After.ID)
	case q.Before != nil:
		where += ` AND (e.created_at, e.id) > ($3, $4)`
		args = append(args, q.Before.CreatedAt, q.Before.ID)
		order = `e.created_at, e.id`
	}
	rows, err := s.pool.Query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints e WHERE `+where+` ORDER BY `+order+` LIMIT $2`, args...)
	if err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", postgres.Unavailable(err))
	}
	var out []webhooks.StoredEndpoint
	for rows.Next() {
		e, err := scanEndpoint(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("list webhook endpoints: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", postgres.Unavailable(err))
	}
	if q.Before != nil {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, nil
}

// DeleteEndpoint implements webhooks.Endpoints.
func (s *Store) DeleteEndpoint(ctx context.Context, id string, at time.Time) (webhooks.StoredEndpoint, error) {
	err := postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL`, id, at)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return cancelPending(ctx, tx, id, 0, "endpoint deleted")
	})
	if err != nil {
		return webhooks.StoredEndpoint{}, fmt.Errorf("delete webhook endpoint: %w", postgres.Unavailable(err))
	}
	return s.Endpoint(ctx, id)
}

// cancelPending cancels endpoint id's pending deliveries but except.
func cancelPending(ctx context.Context, tx *postgres.Tx, id string, except int64, why string) error {
	_, err := tx.Exec(ctx, `
		UPDATE webhook_deliveries SET status = 'canceled', next_attempt_at = NULL, locked_until = NULL, last_error = $3
		WHERE endpoint_id = $1 AND status = 'pending' AND id <> $2`, id, except, why)
	if err != nil {
		return fmt.Errorf("cancel pending deliveries: %w", err)
	}
	return nil
}

// RotateSecret implements webhooks.Endpoints in one statement, so that two
// rotations at once each keep the secret the other replaced.
func (s *Store) RotateSecret(ctx context.Context, id string, current []byte, previousExpires time.Time) (webhooks.StoredEndpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx, `
		UPDATE webhook_endpoints e SET secret_previous = e.secret_current, secret_current = $2, previous_expires_at = $3
		WHERE e.id = $1 AND e.deleted_at IS NULL
		RETURNING `+endpointColumns, id, current, previousExpires))
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := s.Endpoint(ctx, id); err != nil {
			return webhooks.StoredEndpoint{}, err
		}
		return webhooks.StoredEndpoint{}, fmt.Errorf("%w: %s", webhooks.ErrEndpointDeleted, id)
	}
	if err != nil {
		return webhooks.StoredEndpoint{}, fmt.Errorf("rotate webhook secret: %w", postgres.Unavailable(err))
	}
	return e, nil
}

const attemptColumns = `a.id, a.endpoint_id, d.event_id::text, d.event_type, a.attempted_at, coalesce(a.status_code, 0), a.latency_ms, coalesce(a.error, ''), a.outcome`

func scanAttempt(row pgx.Row) (webhooks.Attempt, error) {
	var (
		a       webhooks.Attempt
		latency int64
		outcome string
	)
	err := row.Scan(&a.ID, &a.EndpointID, &a.EventID, &a.EventType, &a.AttemptedAt, &a.StatusCode, &latency, &a.Error, &outcome)
	a.AttemptedAt, a.Latency, a.Outcome = a.AttemptedAt.UTC(), time.Duration(latency)*time.Millisecond, webhooks.Outcome(outcome)
	return a, err
}

// Attempts implements webhooks.Endpoints.
func (s *Store) Attempts(ctx context.Context, q webhooks.AttemptQuery) ([]webhooks.Attempt, error) {
	where, order, args := `a.endpoint_id = $1`, `a.id DESC`, []any{q.EndpointID, q.Limit}
	switch {
	case q.After != "":
		where += ` AND a.id < $3`
		args = append(args, q.After)
	case q.Before != "":
		where += ` AND a.id > $3`
		args = append(args, q.Before)
		order = `a.id`
	}
	rows, err := s.pool.Query(ctx, `SELECT `+attemptColumns+` FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
		WHERE `+where+` ORDER BY `+order+` LIMIT $2`, args...)
	if err != nil {
		return nil, fmt.Errorf("list webhook attempts: %w", postgres.Unavailable(err))
	}
	var out []webhooks.Attempt
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("list webhook attempts: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list webhook attempts: %w", postgres.Unavailable(err))
	}
	if q.Before != "" {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, nil
}

// Attempt implements webhooks.Endpoints.
func (s *Store) Attempt(ctx context.Context, endpointID, id string) (webhooks.Attempt, error) {
	a, err := scanAttempt(s.pool.QueryRow(ctx, `SELECT `+attemptColumns+` FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
		WHERE a.id = $1 AND a.endpoint_id = $2`, id, endpointID))
	if errors.Is(err, pgx.ErrNoRows) {
		return webhooks.Attempt{}, fmt.Errorf("%w: %s", webhooks.ErrUnknownCursor, id)
	}
	if err != nil {
		return webhooks.Attempt{}, fmt.Errorf("read webhook attempt: %w", postgres.Unavailable(err))
	}
	return a, nil
}

// Redeliver implements webhooks.Endpoints. A delivery in flight keeps its
// lease; any other has none.
func (s *Store) Redeliver(ctx context.Context, endpointID, eventID string, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE webhook_deliveries SET next_attempt_at = $3, delivered_at = NULL,
			locked_until = CASE WHEN status = 'pending' THEN locked_until END, status = 'pending'
		WHERE endpoint_id = $1 AND event_id = $2`, endpointID, eventID, at)
	if err != nil {
		return fmt.Errorf("redeliver: %w", postgres.Unavailable(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", webhooks.ErrEventNotFound, eventID)
	}
	return nil
}

// recoverSQL picks the deliveries of RecoverQuery, locked, one more than
// its limit (to tell whether more wait): the recover index read in order.
const recoverSQL = `
SELECT id, event_id::text FROM webhook_deliveries
WHERE endpoint_id = $1 AND status IN ('pending', 'parked') AND created_at >= $2 AND (created_at, id) > ($3, $4)
  AND (status = 'parked' OR attempts > 0 AND next_attempt_at > $5 AND (locked_until IS NULL OR locked_until <= $5))
ORDER BY created_at, id
LIMIT $6
FOR UPDATE`

// requeueSQL makes the picked deliveries due from $2, a microsecond apart
// in their order, so that the claim sends them oldest first.
const requeueSQL = `
UPDATE webhook_deliveries d SET status = 'pending', next_attempt_at = $2::timestamptz + (p.n - 1) * interval '1 microsecond',
	locked_until = NULL, delivered_at = NULL
FROM unnest($1::bigint[]) WITH ORDINALITY AS p(id, n)
WHERE d.id = p.id`

// recoveryAnswer is how a recovery's answer is kept with its key.
type recoveryAnswer struct {
	Queued  int    `json:"queued"`
	HasMore bool   `json:"has_more"`
	Last    string `json:"last"`
}

// Recover implements webhooks.Endpoints. The key, locked first
// (postgres.LockKey: a twin in flight is refused), is looked up: a retry
// finds the first request's answer. Otherwise the answer is stored with the
// key, in the transaction that queues the deliveries.
func (s *Store) Recover(ctx context.Context, q webhooks.RecoverQuery, key *idempotency.Key) (webhooks.Recovery, error) {
	var res webhooks.Recovery
	err := postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
		if key != nil {
			if err := postgres.LockKey(ctx, tx, key); err != nil {
				return err
			}
			replay, found, err := storedRecovery(ctx, tx, key)
			if err != nil || found {
				res = replay
				return err
			}
		}
		after, afterID := epoch, int64(0)
		if q.After != "" {
			err := tx.QueryRow(ctx, `SELECT created_at, id FROM webhook_deliveries WHERE endpoint_id = $1 AND event_id = $2`,
				q.EndpointID, q.After).Scan(&after, &afterID)
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: %s", webhooks.ErrUnknownCursor, q.After)
			}
			if err != nil {
				return fmt.Errorf("read recovery cursor: %w", err)
			}
		}
		rows, err := tx.Query(ctx, recoverSQL, q.EndpointID, q.Since, after, afterID, q.At, q.Limit+1)
		if err != nil {
			return fmt.Errorf("pick deliveries to recover: %w", err)
		}
		var (
			ids    []int64
			events []string
		)
		for rows.Next() {
			var (
				id    int64
				event string
			)
			if err := rows.Scan(&id, &event); err != nil {
				rows.Close()
				return err
			}
			ids, events = append(ids, id), append(events, event)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("pick deliveries to recover: %w", err)
		}
		res = webhooks.Recovery{HasMore: len(ids) > q.Limit}
		ids = ids[:min(len(ids), q.Limit)]
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, requeueSQL, ids, q.At); err != nil {
				return fmt.Errorf("recover deliveries: %w", err)
			}
			res.Queued, res.Last = len(ids), events[len(ids)-1]
		}
		if key == nil {
			return nil
		}
		answer, err := json.Marshal(recoveryAnswer{Queued: res.Queued, HasMore: res.HasMore, Last: res.Last})
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO webhook_idempotency_keys (merchant_id, key, fingerprint, endpoint_id, created_at, answer) VALUES ($1, $2, $3, $4, $5, $6)`,
			key.Merchant, key.Key, key.Fingerprint, q.EndpointID, q.At, answer); err != nil {
			return fmt.Errorf("insert idempotency key: %w", err)
		}
		return nil
	})
	if err != nil {
		return webhooks.Recovery{}, fmt.Errorf("recover webhook deliveries: %w", postgres.Unavailable(err))
	}
	return res, nil
}

// storedRecovery returns the answer stored with key, and whether there is
// one. Errors: ErrKeyReused (the key is stored with another fingerprint, or
// by a create).
func storedRecovery(ctx context.Context, tx *postgres.Tx, key *idempotency.Key) (webhooks.Recovery, bool, error) {
	var (
		fingerprint string
		answer      []byte
	)
	err := tx.QueryRow(ctx, `SELECT fingerprint, answer FROM webhook_idempotency_keys WHERE merchant_id = $1 AND key = $2`,
		key.Merchant, key.Key).Scan(&fingerprint, &answer)
	if errors.Is(err, pgx.ErrNoRows) {
		return webhooks.Recovery{}, false, nil
	}
	if err != nil {
		return webhooks.Recovery{}, false, fmt.Errorf("read idempotency key: %w", postgres.Unavailable(err))
	}
	var a recoveryAnswer
	if fingerprint != key.Fingerprint || json.Unmarshal(answer, &a) != nil {
		return webhooks.Recovery{}, false, fmt.Errorf("%w: %s", idempotency.ErrKeyReused, key.Key)
	}
	return webhooks.Recovery{Queued: a.Queued, HasMore: a.HasMore, Last: a.Last, Replayed: true}, true, nil
}
