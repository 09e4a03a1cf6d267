// Package outboxstore is the relay's view of the payments outbox table in
// Postgres: claiming rows of the relay's partitions for publication, recording
// what the broker acknowledged, the partition leases (outbox_leases) and the
// partition count, the operator's stats and requeue, cleanup of old PUBLISHED
// rows, and the LISTEN loop that wakes the relay when the write side commits a
// row.
//
// The write side (paymentstore) inserts the rows; this package never does.
package outboxstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/relay"
	"github.com/payments-outbox/payments-outbox/application/retention"
)

// Channel is the LISTEN/NOTIFY channel the write side notifies after it commits
// outbox rows (paymentstore.Notifier): SELECT pg_notify('outbox_pending', ”) with
// an empty payload, since the relay only needs to know that something is waiting.
const Channel = postgres.OutboxChannel

var (
	// ErrNotFound is returned by Requeue for an id with no outbox row.
	ErrNotFound = errors.New("outbox row not found")
	// ErrNotDead is returned by Requeue for a row that is PENDING or PUBLISHED:
	// only DEAD rows are requeued, so a requeue never publishes an event twice.
	ErrNotDead = errors.New("outbox row is not dead")
)

// Store is the outbox table. It is safe for concurrent use; any number of relays,
// in one process or many, may claim from the same table.
type Store struct {
	pool *pgxpool.Pool
}

var (
	_ relay.Store       = (*Store)(nil)
	_ relay.StatsSource = (*Store)(nil)

	_ retention.DeleteFunc = (*Store)(nil).DeletePublished
)

// New returns a Store on pool. Each concurrent ClaimBatch holds one connection
// while its batch is published, so size the pool for the relay's workers on top of
// the rest of the process.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool}
}

// The claims. Each names the partition count in the partition expression, as
// a constant, because that is what the pending indexes are built on
// (outbox_pending_p<N>_idx, outbox_ordered_p<N>_idx): with it the planner
// scans each named partition's range of the index in index order, and no
// claim reads rows of a partition it does not own.
//
// Unordered: due rows only, oldest due first, so a retrying row waits behind
// its backoff and never in front of new rows; SKIP LOCKED keeps claims that
// meet on a partition (a lease changing hands) on disjoint rows.
const claimSQL = `
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, true
FROM outbox
WHERE outbox_partition(aggregate_id, %[1]d) = ANY($2) AND status = 'PENDING' AND next_attempt_at <= now()
ORDER BY outbox_partition(aggregate_id, %[1]d), next_attempt_at, created_at
LIMIT $1
FOR UPDATE SKIP LOCKED`

// Ordered: the partitions' PENDING rows in write order (seq), due or not,
// leaving out the aggregates with a row waiting for its retry (found through
// the unordered index: only the rows due later). No SKIP LOCKED: a row
// another claim holds is waited for, so the rows behind it are read only
// once it is published or failed; the last column is whether the row, as it
// is after that wait, is due. The caller keeps the first row of each
// aggregate that is due.
const claimOrderedSQL = `
WITH blocked AS (
    SELECT DISTINCT aggregate_id FROM outbox
    WHERE outbox_partition(aggregate_id, %[1]d) = ANY($2) AND status = 'PENDING' AND next_attempt_at > now())
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, next_attempt_at <= now()
FROM outbox
WHERE outbox_partition(aggregate_id, %[1]d) = ANY($2) AND status = 'PENDING'
    AND aggregate_id NOT IN (SELECT aggregate_id FROM blocked)
ORDER BY outbox_partition(aggregate_id, %[1]d), seq
LIMIT $1
FOR UPDATE OF outbox`

// The same two for a single partition, the claim a worker drains a backlog
// with: an equality on the partition leaves the index in the order of the
// other columns, so the partition expression is not computed for each row
// returned, as ORDER BY needs it to be across several partitions.
const (
	claimOneSQL = `
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, true
FROM outbox
WHERE outbox_partition(aggregate_id, %[1]d) = $2 AND status = 'PENDING' AND next_attempt_at <= now()
ORDER BY next_attempt_at, created_at
LIMIT $1
FOR UPDATE SKIP LOCKED`
	claimOneOrderedSQL = `
WITH blocked AS (
    SELECT DISTINCT aggregate_id FROM outbox
    WHERE outbox_partition(aggregate_id, %[1]d) = $2 AND status = 'PENDING' AND next_attempt_at > now())
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, next_attempt_at <= now()
FROM outbox
WHERE outbox_partition(aggregate_id, %[1]d) = $2 AND status = 'PENDING'
    AND aggregate_id NOT IN (SELECT aggregate_id FROM blocked)
ORDER BY seq
LIMIT $1
FOR UPDATE OF outbox`
)

// The same two over every partition, for a Claim that names none (tests and
// tools with a single relay): no partition index serves them, so they sort
// the whole backlog.
const (
	claimAllSQL = `
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, true
FROM outbox
WHERE status = 'PENDING' AND next_attempt_at <= now()
ORDER BY next_attempt_at, created_at
LIMIT $1
FOR UPDATE SKIP LOCKED`
	claimAllOrderedSQL = `
WITH blocked AS (
    SELECT DISTINCT aggregate_id FROM outbox WHERE status = 'PENDING' AND next_attempt_at > now())
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, next_attempt_at <= now()
FROM outbox
WHERE status = 'PENDING' AND aggregate_id NOT IN (SELECT aggregate_id FROM blocked)
ORDER BY seq
LIMIT $1
FOR UPDATE OF outbox`
)

// claimQuery is the claim statement for c and its arguments.
func claimQuery(c relay.Claim) (string, []any) {
	if c.Owned == nil {
		if c.Ordered {
			return claimAllOrderedSQL, []any{c.Limit}
		}
		return claimAllSQL, []any{c.Limit}
	}
	if len(c.Owned) == 1 {
		q := claimOneSQL
		if c.Ordered {
			q = claimOneOrderedSQL
		}
		return fmt.Sprintf(q, c.Partitions), []any{c.Limit, int32(c.Owned[0])}
	}
	q := claimSQL
	if c.Ordered {
		q = claimOrderedSQL
	}
	owned := make([]int32, len(c.Owned))
	for i, p := range c.Owned {
		owned[i] = int32(p)
	}
	return fmt.Sprintf(q, c.Partitions), []any{c.Limit, owned}
}

// One statement marks the whole acknowledged part of a batch.
const markPublishedSQL = `
UPDATE outbox SET status = 'PUBLISHED', published_at = $2
WHERE id = ANY($1) AND status = 'PENDING'`

// One statement records every failure of a batch, retries and deaths alike.
const markFailedSQL = `
UPDATE outbox AS o
SET attempts = o.attempts + 1, last_error = f.err, status = f.status,
    next_attempt_at = COALESCE(f.next_attempt_at, o.next_attempt_at)
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[]) AS f(id, err, status, next_attempt_at)
WHERE o.id = f.id AND o.status = 'PENDING'`

// ClaimBatch implements relay.Store. The row locks are held while fn publishes,
// so no other relay can claim the same rows; the marks are written in the same
// transaction. If the process dies after the broker acknowledged and before the
// commit, the rows stay PENDING and are published again: the at-least-once window.
//
// The transaction costs two round trips (postgres.Transact): BEGIN travels with
// the claim, and the marks with COMMIT. A failed mark never commits, and the
// transaction is rolled back even when ctx has ended (a shutdown mid-batch).
func (s *Store) ClaimBatch(ctx context.Context, c relay.Claim, fn func([]relay.Message) (relay.Outcome, error)) (int, error) {
	if c.Owned != nil && len(c.Owned) == 0 {
		return 0, nil
	}
	var n int
	err := postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
		locked, err := claim(ctx, tx, c)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		n = len(locked)
		var msgs []relay.Message
		if c.Ordered {
			msgs = firstDuePerAggregate(locked)
		} else {
			msgs = make([]relay.Message, len(locked))
			for i, r := range locked {
				msgs[i] = r.Message
			}
		}
		if len(msgs) == 0 {
			return nil
		}
		out, err := fn(msgs)
		if err != nil {
			return err
		}
		queueOutcome(tx, out)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// claimedRow is a locked row and whether it is due.
type claimedRow struct {
	relay.Message
	due bool
}

// firstDuePerAggregate keeps, of rows in write order, the first row of each
// aggregate when it is due: one row per aggregate per batch, because the
// publisher may send the rows of one batch in any order, and a row of an
// aggregate whose first row is not due (failed while this claim waited for
// it) stays behind it.
func firstDuePerAggregate(rows []claimedRow) []relay.Message {
	seen := make(map[uuid.UUID]bool, len(rows))
	msgs := make([]relay.Message, 0, len(rows))
	for _, r := range rows {
		if !seen[r.AggregateID] && r.due {
			msgs = append(msgs, r.Message)
		}
		seen[r.AggregateID] = true
	}
	return msgs
}

// claim locks the rows c asks for; as the transaction's first statement it
// travels with BEGIN, in one round trip. Each Payload is the column's bytes
// as the write side stored them (json keeps its input text), which the
// relay publishes unchanged.
func claim(ctx context.Context, tx *postgres.Tx, c relay.Claim) ([]claimedRow, error) {
	q, args := claimQuery(c)
	var b pgx.Batch
	b.Queue(q, args...)
	br := tx.SendBatch(ctx, &b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	out := make([]claimedRow, 0, c.Limit)
	var m claimedRow
	_, err = pgx.ForEachRow(rows, []any{&m.ID, &m.AggregateID, &m.Type, &m.Payload, &m.Attempts, &m.CreatedAt, &m.TraceParent, &m.TraceState, &m.due}, func() error {
		out = append(out, m)
		m.Payload = nil // the next Scan must not write into this message's bytes
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, br.Close()
}

// queueOutcome queues, to be sent with the COMMIT, the statements that record
// a batch's outcome: one for every acknowledged row, one for every failure,
// retries and deaths alike.
func queueOutcome(tx *postgres.Tx, out relay.Outcome) {
	if len(out.Published) > 0 {
		tx.QueueAtCommit(markPublishedSQL, pgUUIDs(out.Published), out.PublishedAt)
	}
	if n := len(out.Retry) + len(out.Dead); n > 0 {
		ids := make([]pgtype.UUID, 0, n)
		errs := make([]string, 0, n)
		statuses := make([]string, 0, n)
		next := make([]*time.Time, 0, n)
		for _, f := range out.Retry {
			ids, errs, statuses = append(ids, pgUUID(f.ID)), append(errs, f.Error), append(statuses, "PENDING")
			next = append(next, &f.NextAttemptAt)
		}
		for _, f := range out.Dead {
			ids, errs, statuses = append(ids, pgUUID(f.ID)), append(errs, f.Error), append(statuses, "DEAD")
			next = append(next, nil)
		}
		tx.QueueAtCommit(markFailedSQL, ids, errs, statuses, next)
	}
}

// Stats implements relay.StatsSource with two queries over the PENDING and
// DEAD partial indexes; PUBLISHED rows, however many, are not read.
func (s *Store) Stats(ctx context.Context) (relay.Stats, error) {
	var b pgx.Batch
	b.Queue(`
SELECT type, status, count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8
FROM outbox
WHERE status IN ('PENDING', 'DEAD')
GROUP BY type, status
ORDER BY type, status`)
	b.Queue(`SELECT partitions FROM outbox_partitioning`)
	b.Queue(`
SELECT outbox_partition(o.aggregate_id, p.partitions), count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(o.created_at)), 0)::float8
FROM outbox o, outbox_partitioning p
WHERE o.status = 'PENDING'
GROUP BY 1
ORDER BY 1`)
	br := s.pool.SendBatch(ctx, &b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return relay.Stats{}, fmt.Errorf("outbox stats: %w", err)
	}
	var (
		st     relay.Stats
		typ    string
		status string
		n      int64
		age    float64
	)
	_, err = pgx.ForEachRow(rows, []any{&typ, &status, &n, &age}, func() error {
		if len(st.ByType) == 0 || st.ByType[len(st.ByType)-1].Type != typ {
			st.ByType = append(st.ByType, relay.TypeStats{Type: typ})
		}
		ts := &st.ByType[len(st.ByType)-1]
		switch status {
		case "PENDING":
			ts.Pending = n
			ts.OldestPending = seconds(age)
			st.Pending += n
			st.OldestPending = max(st.OldestPending, ts.OldestPending)
		case "DEAD":
			ts.Dead = n
			st.Dead += n
		}
		return nil
	})
	if err != nil {
		return relay.Stats{}, fmt.Errorf("outbox stats: %w", err)
	}
	if err := br.QueryRow().Scan(&st.Partitions); err != nil {
		return relay.Stats{}, fmt.Errorf("outbox stats: partition count: %w", err)
	}
	rows, err = br.Query()
	if err != nil {
		return relay.Stats{}, fmt.Errorf("outbox stats per partition: %w", err)
	}
	var ps relay.PartitionStats
	_, err = pgx.ForEachRow(rows, []any{&ps.Partition, &ps.Pending, &age}, func() error {
		ps.OldestPending = seconds(age)
		st.ByPartition = append(st.ByPartition, ps)
		return nil
	})
	if err != nil {
		return relay.Stats{}, fmt.Errorf("outbox stats per partition: %w", err)
	}
	return st, br.Close()
}

func seconds(s float64) time.Duration { return time.Duration(max(s, 0) * float64(time.Second)) }

// Requeue turns the DEAD row id back into a due PENDING row with a fresh set of
// attempts (last_error is kept for the record), and notifies Channel so a running
// relay picks it up at once. It returns ErrNotFound or ErrNotDead, wrapped with id.
func (s *Store) Requeue(ctx context.Context, id uuid.UUID) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, requeueSQL+` AND id = $1`, id)
		if err != nil {
			return fmt.Errorf("requeue %s: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox WHERE id = $1)`, id).Scan(&exists); err != nil {
				return fmt.Errorf("requeue %s: %w", id, err)
			}
			if !exists {
				return fmt.Errorf("%w: %s", ErrNotFound, id)
			}
			return fmt.Errorf("%w: %s", ErrNotDead, id)
		}
		return notify(ctx, tx)
	})
}

// RequeueAll requeues every DEAD row, as Requeue does, and returns how many.
func (s *Store) RequeueAll(ctx context.Context) (int, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, requeueSQL)
		if err != nil {
			return fmt.Errorf("requeue all: %w", err)
		}
		n = tag.RowsAffected()
		if n == 0 {
			return nil
		}
		return notify(ctx, tx)
	})
	return int(n), err
}

const requeueSQL = `UPDATE outbox SET status = 'PENDING', attempts = 0, next_attempt_at = now() WHERE status = 'DEAD'`

func notify(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, Channel); err != nil {
		return fmt.Errorf("notify %s: %w", Channel, err)
	}
	return nil
}

// DeletePublished is the outbox's retention.DeleteFunc: it deletes at most
// limit PUBLISHED rows published before cutoff, oldest first, in one short
// statement through the outbox_published_idx partial index. PENDING and DEAD
// rows are never touched: only acknowledged events may go.
func (s *Store) DeletePublished(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
DELETE FROM outbox WHERE id IN (
    SELECT id FROM outbox
    WHERE status = 'PUBLISHED' AND published_at < $1
    ORDER BY published_at
    LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("delete published outbox rows: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// pgUUID hands an id to pgx as pgtype.UUID, which it encodes straight to
// binary; a uuid.UUID would take a failed binary encode, which builds an
// error, and a text round trip first, for every id of every batch (what that
// cost the write path: docs/BENCHMARKS.md).
func pgUUID(id uuid.UUID) pgtype.UUID { return pgtype.UUID{Bytes: id, Valid: true} }

func pgUUIDs(ids []uuid.UUID) []pgtype.UUID {
	out := make([]pgtype.UUID, len(ids))
	for i, id := range ids {
		out[i] = pgUUID(id)
	}
	return out
}
