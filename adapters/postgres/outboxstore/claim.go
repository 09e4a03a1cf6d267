package outboxstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/relay"
)

// claimDueSQL is the outbox relay's claim as the pattern describes it: the
// due PENDING rows, oldest due first, locked by this transaction until it
// commits, skipping the rows another claim holds (SKIP LOCKED), so that any
// number of relays claim side by side, each its own rows. Due first, so a
// row waiting for its retry waits behind its backoff and never in front of
// new rows. The last column says the row is due (always, here: the ordered
// claims read rows that are not). It reads every partition: the claim of a
// single relay (tests and tools); the replicas' are the variants below.
const claimDueSQL = `
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, true
FROM outbox
WHERE status = 'PENDING' AND next_attempt_at <= now()
ORDER BY next_attempt_at, created_at
LIMIT $1
FOR UPDATE SKIP LOCKED`

// leasedOfSQL is, of the partitions $2 names, the ones whose lease the
// claiming relay ($3) holds by the database's clock. Every partitioned claim
// reads only those: the relay names the partitions its last heartbeat left
// it, and a claim made from that list after it went stale — the heartbeat
// that gave a partition up committed, but its answer was lost, or the
// process paused past the expiry — still never reads a partition another
// replica has taken. It reads at most the partition count's rows of
// outbox_leases, once per claim (an InitPlan).
const leasedOfSQL = `SELECT partition FROM outbox_leases WHERE partition = ANY($2::int[]) AND owner = $3 AND expires_at > now()`

// leaseHeldSQL is leasedOfSQL for the one partition $2 of the
// single-partition claims: a row when the relay $3 holds its lease.
const leaseHeldSQL = `SELECT FROM outbox_leases WHERE partition = $2 AND owner = $3 AND expires_at > now()`

// claimDueInPartitionsSQL is claimDueSQL in the partitions $2 names whose
// leases the relay $3 holds (leasedOfSQL): the claim of a replica. The partition count is written
// into the statement (%[1]d), a constant, because that is what the pending
// index is built on (outbox_pending_p<N>_idx): with it the planner scans
// each named partition's range of the index in index order, and no claim
// reads rows of a partition it does not own.
const claimDueInPartitionsSQL = `
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, true
FROM outbox
WHERE outbox_partition(aggregate_id, %[1]d) = ANY(ARRAY(` + leasedOfSQL + `)) AND status = 'PENDING' AND next_attempt_at <= now()
ORDER BY outbox_partition(aggregate_id, %[1]d), next_attempt_at, created_at
LIMIT $1
FOR UPDATE SKIP LOCKED`

// claimDueInPartitionSQL is claimDueInPartitionsSQL for the one partition $2,
// the claim a worker drains a backlog with: an equality on the partition
// leaves the index in the order of the other columns, so the partition
// expression is not computed for each row returned, as ORDER BY needs it to
// be across several partitions.
const claimDueInPartitionSQL = `
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, true
FROM outbox
WHERE outbox_partition(aggregate_id, %[1]d) = $2 AND status = 'PENDING' AND next_attempt_at <= now()
    AND EXISTS (` + leaseHeldSQL + `)
ORDER BY next_attempt_at, created_at
LIMIT $1
FOR UPDATE SKIP LOCKED`

// claimInOrderSQL adds each aggregate's order to claimDueSQL (Claim.Ordered):
// the PENDING rows in write order (seq), due or not, leaving out the
// aggregates with a row waiting for its retry (found through the due-first
// index: only the rows due later). No SKIP LOCKED: a row another claim holds
// is waited for, so the rows behind it are read only once it is published or
// failed; the last column is whether the row, as it is after that wait, is
// due. The caller keeps the first row of each aggregate that is due
// (firstDuePerAggregate).
const claimInOrderSQL = `
WITH blocked AS (
    SELECT DISTINCT aggregate_id FROM outbox WHERE status = 'PENDING' AND next_attempt_at > now())
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, next_attempt_at <= now()
FROM outbox
WHERE status = 'PENDING' AND aggregate_id NOT IN (SELECT aggregate_id FROM blocked)
ORDER BY seq
LIMIT $1
FOR UPDATE OF outbox`

// claimInOrderInPartitionsSQL is claimInOrderSQL in the partitions $2 names,
// on the write-order index of the partition count (outbox_ordered_p<N>_idx),
// as claimDueInPartitionsSQL is on the due-first one.
const claimInOrderInPartitionsSQL = `
WITH blocked AS (
    SELECT DISTINCT aggregate_id FROM outbox
    WHERE outbox_partition(aggregate_id, %[1]d) = ANY($2) AND status = 'PENDING' AND next_attempt_at > now())
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, next_attempt_at <= now()
FROM outbox
WHERE outbox_partition(aggregate_id, %[1]d) = ANY(ARRAY(` + leasedOfSQL + `)) AND status = 'PENDING'
    AND aggregate_id NOT IN (SELECT aggregate_id FROM blocked)
ORDER BY outbox_partition(aggregate_id, %[1]d), seq
LIMIT $1
FOR UPDATE OF outbox`

// claimInOrderInPartitionSQL is claimInOrderInPartitionsSQL for the one
// partition $2, for the reason claimDueInPartitionSQL is.
const claimInOrderInPartitionSQL = `
WITH blocked AS (
    SELECT DISTINCT aggregate_id FROM outbox
    WHERE outbox_partition(aggregate_id, %[1]d) = $2 AND status = 'PENDING' AND next_attempt_at > now())
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, next_attempt_at <= now()
FROM outbox
WHERE outbox_partition(aggregate_id, %[1]d) = $2 AND status = 'PENDING'
    AND aggregate_id NOT IN (SELECT aggregate_id FROM blocked)
    AND EXISTS (` + leaseHeldSQL + `)
ORDER BY seq
LIMIT $1
FOR UPDATE OF outbox`

// claimStatement is the claim for c, one of the six above, and its
// arguments.
func claimStatement(c relay.Claim) (string, []any) {
	switch {
	case c.Owned == nil && !c.Ordered:
		return claimDueSQL, []any{c.Limit}
	case c.Owned == nil:
		return claimInOrderSQL, []any{c.Limit}
	case len(c.Owned) == 1 && !c.Ordered:
		return fmt.Sprintf(claimDueInPartitionSQL, c.Partitions), []any{c.Limit, int32(c.Owned[0]), c.Owner}
	case len(c.Owned) == 1:
		return fmt.Sprintf(claimInOrderInPartitionSQL, c.Partitions), []any{c.Limit, int32(c.Owned[0]), c.Owner}
	case !c.Ordered:
		return fmt.Sprintf(claimDueInPartitionsSQL, c.Partitions), []any{c.Limit, int32s(c.Owned), c.Owner}
	default:
		return fmt.Sprintf(claimInOrderInPartitionsSQL, c.Partitions), []any{c.Limit, int32s(c.Owned), c.Owner}
	}
}

func int32s(ps []int) []int32 {
	out := make([]int32, len(ps))
	for i, p := range ps {
		out[i] = int32(p)
	}
	return out
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
func (s *Store) ClaimBatch(ctx context.Context, c relay.Claim, fn func([]outbox.Message) (relay.BatchResult, error)) (int, error) {
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
		var msgs []outbox.Message
		if c.Ordered {
			msgs = firstDuePerAggregate(locked)
		} else {
			msgs = make([]outbox.Message, len(locked))
			for i, r := range locked {
				msgs[i] = r.Message
			}
		}
		if len(msgs) == 0 {
			return nil
		}
		res, err := fn(msgs)
		if err != nil {
			return err
		}
		queueMarks(tx, res)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// claimedRow is a locked row and whether it is due.
type claimedRow struct {
	outbox.Message
	due bool
}

// firstDuePerAggregate keeps, of rows in write order, the first row of each
// aggregate when it is due: one row per aggregate per batch, because the
// publisher may send the rows of one batch in any order, and a row of an
// aggregate whose first row is not due (failed while this claim waited for
// it) stays behind it.
func firstDuePerAggregate(rows []claimedRow) []outbox.Message {
	seen := make(map[uuid.UUID]bool, len(rows))
	msgs := make([]outbox.Message, 0, len(rows))
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
	q, args := claimStatement(c)
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

// queueMarks queues, to be sent with the COMMIT, the statements that write
// a batch's result: one for every acknowledged row, one for every failure,
// retries and deaths alike.
func queueMarks(tx *postgres.Tx, res relay.BatchResult) {
	if len(res.Published) > 0 {
		tx.QueueAtCommit(markPublishedSQL, pgUUIDs(res.Published), res.PublishedAt)
	}
	if n := len(res.Retry) + len(res.Dead); n > 0 {
		ids := make([]pgtype.UUID, 0, n)
		errs := make([]string, 0, n)
		statuses := make([]string, 0, n)
		next := make([]*time.Time, 0, n)
		for _, f := range res.Retry {
			ids, errs, statuses = append(ids, pgUUID(f.ID)), append(errs, f.Error), append(statuses, "PENDING")
			next = append(next, &f.NextAttemptAt)
		}
		for _, f := range res.Dead {
			ids, errs, statuses = append(ids, pgUUID(f.ID)), append(errs, f.Error), append(statuses, "DEAD")
			next = append(next, nil)
		}
		tx.QueueAtCommit(markFailedSQL, ids, errs, statuses, next)
	}
}

// pgUUID hands an id to pgx as pgtype.UUID, which it encodes straight to
// binary; a uuid.UUID would take a failed binary encode, which builds an
// error, and a text round trip first, for every id of every batch.
func pgUUID(id uuid.UUID) pgtype.UUID { return pgtype.UUID{Bytes: id, Valid: true} }

func pgUUIDs(ids []uuid.UUID) []pgtype.UUID {
	out := make([]pgtype.UUID, len(ids))
	for i, id := range ids {
		out[i] = pgUUID(id)
	}
	return out
}
