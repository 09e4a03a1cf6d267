// Package webhookstore is the webhooks service's Postgres adapter: the
// shared inbox (inboxstore) with the fan-out bound to its transactions and
// savepoints, the merchant API's endpoints, and the delivery workers'
// claims, attempts and leases. It starts no span and counts nothing: the
// SQL reads as SQL. Every outage is wrapped in dependency.ErrUnavailable.
package webhookstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/inboxstore"
	"github.com/payments-outbox/payments-outbox/application/dependency"
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

// unavailable wraps an outage in dependency.ErrUnavailable.
func unavailable(err error) error {
	if err != nil && postgres.IsUnavailable(err) && !errors.Is(err, dependency.ErrUnavailable) {
		return fmt.Errorf("%w: %w", dependency.ErrUnavailable, err)
	}
	return err
}

// fanout is the handler's repository inside the inbox row's transaction.
type fanout struct{ tx inboxstore.Tx }

// enqueueSQL writes one delivery per subscribed endpoint of the merchant in
// one statement; the unique (endpoint, event) pair skips those written.
const enqueueSQL = `
INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, payload, created_at, next_attempt_at)
SELECT e.id, $2, $3, $4, $5, $5
FROM webhook_endpoints e
WHERE e.merchant_id = $1 AND e.status = 'enabled' AND e.deleted_at IS NULL
  AND ($3 = ANY(e.enabled_events) OR '*' = ANY(e.enabled_events))
ORDER BY e.id
ON CONFLICT (endpoint_id, event_id) DO NOTHING`

// Enqueue implements webhooks.Fanout.
func (f fanout) Enqueue(ctx context.Context, d webhooks.NewDelivery) (int, error) {
	tag, err := f.tx.Exec(ctx, enqueueSQL, d.MerchantID, d.EventID, d.EventType, d.Payload, d.At)
	if err != nil {
		return 0, fmt.Errorf("fan out event %s: %w", d.EventID, unavailable(err))
	}
	return int(tag.RowsAffected()), nil
}

const endpointColumns = `e.id, e.merchant_id, e.url, e.description, e.enabled_events, e.status, coalesce(e.disabled_reason, ''),
	e.created_at, coalesce(e.deleted_at, 'epoch'), e.secret_current, e.secret_previous, coalesce(e.previous_expires_at, 'epoch'),
	coalesce(e.failing_since, 'epoch')`

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
		&e.CreatedAt, &e.DeletedAt, &e.Secrets.Current, &e.Secrets.Previous, &e.Secrets.PreviousExpiresAt, &e.FailingSince)
	e.Status = webhooks.EndpointStatus(status)
	e.CreatedAt, e.DeletedAt, e.FailingSince = e.CreatedAt.UTC(), unepoch(e.DeletedAt), unepoch(e.FailingSince)
	e.Secrets.PreviousExpiresAt = unepoch(e.Secrets.PreviousExpiresAt)
	return e, err
}

// Create implements webhooks.Endpoints: the key first, so that a retry
// waits on the first request's row lock and then finds its result.
func (s *Store) Create(ctx context.Context, e webhooks.StoredEndpoint, key *webhooks.IdempotencyKey, answered []byte) (webhooks.CreateResult, error) {
	var res webhooks.CreateResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO webhook_endpoints (id, merchant_id, url, description, enabled_events, status, secret_current, created_at)
			VALUES ($1, $2, $3, $4, $5, 'enabled', $6, $7)`,
			e.ID, e.MerchantID, e.URL, e.Description, e.EnabledEvents, e.Secrets.Current, e.CreatedAt); err != nil {
			return fmt.Errorf("insert webhook endpoint: %w", err)
		}
		if key != nil {
			tag, err := tx.Exec(ctx, `
				INSERT INTO webhook_idempotency_keys (merchant_id, key, fingerprint, endpoint_id, secret, created_at)
				VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (merchant_id, key) DO NOTHING`,
				key.Merchant, key.Key, key.Fingerprint, e.ID, answered, e.CreatedAt)
			if err != nil {
				return fmt.Errorf("insert idempotency key: %w", err)
			}
			if tag.RowsAffected() == 0 {
				return errReplay
			}
		}
		res = webhooks.CreateResult{Endpoint: e, Answered: answered}
		return nil
	})
	if errors.Is(err, errReplay) {
		return s.replay(ctx, key)
	}
	if err != nil {
		return webhooks.CreateResult{}, unavailable(err)
	}
	return res, nil
}

// errReplay rolls back a Create whose key another request stored.
var errReplay = errors.New("idempotency key already stored")

func (s *Store) replay(ctx context.Context, key *webhooks.IdempotencyKey) (webhooks.CreateResult, error) {
	var (
		fingerprint, id string
		answered        []byte
	)
	err := s.pool.QueryRow(ctx, `SELECT fingerprint, endpoint_id, secret FROM webhook_idempotency_keys WHERE merchant_id = $1 AND key = $2`,
		key.Merchant, key.Key).Scan(&fingerprint, &id, &answered)
	if err != nil {
		return webhooks.CreateResult{}, fmt.Errorf("read idempotency key: %w", unavailable(err))
	}
	if fingerprint != key.Fingerprint {
		return webhooks.CreateResult{}, fmt.Errorf("%w: %s", webhooks.ErrKeyReused, key.Key)
	}
	e, err := s.Endpoint(ctx, id)
	if err != nil {
		return webhooks.CreateResult{}, err
	}
	return webhooks.CreateResult{Endpoint: e, Answered: answered, Replayed: true}, nil
}

// Endpoint implements webhooks.Endpoints.
func (s *Store) Endpoint(ctx context.Context, id string) (webhooks.StoredEndpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints e WHERE e.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return webhooks.StoredEndpoint{}, fmt.Errorf("%w: %s", webhooks.ErrEndpointNotFound, id)
	}
	if err != nil {
		return webhooks.StoredEndpoint{}, fmt.Errorf("read webhook endpoint: %w", unavailable(err))
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
		return nil, fmt.Errorf("list webhook endpoints: %w", unavailable(err))
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
		return nil, fmt.Errorf("list webhook endpoints: %w", unavailable(err))
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
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL`, id, at)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return cancelPending(ctx, tx, id, 0, "endpoint deleted")
	})
	if err != nil {
		return webhooks.StoredEndpoint{}, fmt.Errorf("delete webhook endpoint: %w", unavailable(err))
	}
	return s.Endpoint(ctx, id)
}

// cancelPending cancels endpoint id's pending deliveries but except.
func cancelPending(ctx context.Context, tx pgx.Tx, id string, except int64, why string) error {
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
		return webhooks.StoredEndpoint{}, fmt.Errorf("rotate webhook secret: %w", unavailable(err))
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
		return nil, fmt.Errorf("list webhook attempts: %w", unavailable(err))
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
		return nil, fmt.Errorf("list webhook attempts: %w", unavailable(err))
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
		return webhooks.Attempt{}, fmt.Errorf("read webhook attempt: %w", unavailable(err))
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
		return fmt.Errorf("redeliver: %w", unavailable(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", webhooks.ErrEventNotFound, eventID)
	}
	return nil
}
