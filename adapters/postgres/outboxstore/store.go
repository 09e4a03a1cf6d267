// Package outboxstore is the payments outbox table in Postgres, as the
// relay and its operators see it: the relay's claim and its marks
// (claim.go: the article's SELECT … FOR UPDATE SKIP LOCKED), ordered mode's
// claims, leases and partition count (ordered.go, leases.go,
// partitions.go), the operator's stats and requeue, cleanup of old
// PUBLISHED rows, and the LISTEN loop that wakes the relay when the write
// side commits a row (listen.go).
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
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
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
	_ outbox.Store            = (*Store)(nil)
	_ outbox.StatsSource      = (*Store)(nil)
	_ partition.Store         = (*Store)(nil)
	_ partition.BacklogSource = (*Store)(nil)

	_ retention.DeleteFunc = (*Store)(nil).DeletePublished
)

// New returns a Store on pool. Each claim in flight holds one connection
// while its batch is published, so size the pool for the relay's workers on top of
// the rest of the process.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool}
}

// Stats implements outbox.StatsSource with one query over the PENDING and
// DEAD partial indexes; PUBLISHED rows, however many, are not read.
func (s *Store) Stats(ctx context.Context) (outbox.Stats, error) {
	rows, err := s.pool.Query(ctx, `
SELECT type, status, count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8
FROM outbox
WHERE status IN ('PENDING', 'DEAD')
GROUP BY type, status
ORDER BY type, status`)
	if err != nil {
		return outbox.Stats{}, fmt.Errorf("outbox stats: %w", postgres.Unavailable(err))
	}
	var (
		st     outbox.Stats
		typ    string
		status string
		n      int64
		age    float64
	)
	_, err = pgx.ForEachRow(rows, []any{&typ, &status, &n, &age}, func() error {
		if len(st.ByType) == 0 || st.ByType[len(st.ByType)-1].Type != typ {
			st.ByType = append(st.ByType, outbox.TypeStats{Type: typ})
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
		return outbox.Stats{}, fmt.Errorf("outbox stats: %w", postgres.Unavailable(err))
	}
	return st, nil
}

// PartitionBacklog implements partition.BacklogSource: the partition count
// and, per partition with PENDING rows, their count and oldest age.
func (s *Store) PartitionBacklog(ctx context.Context) (partition.Backlog, error) {
	var b pgx.Batch
	b.Queue(`SELECT partitions FROM outbox_partitioning`)
	b.Queue(`
SELECT outbox_partition(o.aggregate_id, p.partitions), count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(o.created_at)), 0)::float8
FROM outbox o, outbox_partitioning p
WHERE o.status = 'PENDING'
GROUP BY 1
ORDER BY 1`)
	br := s.pool.SendBatch(ctx, &b)
	defer br.Close()
	var out partition.Backlog
	if err := br.QueryRow().Scan(&out.Partitions); err != nil {
		return partition.Backlog{}, fmt.Errorf("outbox partition count: %w", postgres.Unavailable(err))
	}
	rows, err := br.Query()
	if err != nil {
		return partition.Backlog{}, fmt.Errorf("outbox backlog per partition: %w", postgres.Unavailable(err))
	}
	var (
		pb  partition.PartitionBacklog
		age float64
	)
	_, err = pgx.ForEachRow(rows, []any{&pb.Partition, &pb.Pending, &age}, func() error {
		pb.OldestPending = seconds(age)
		out.ByPartition = append(out.ByPartition, pb)
		return nil
	})
	if err != nil {
		return partition.Backlog{}, fmt.Errorf("outbox backlog per partition: %w", postgres.Unavailable(err))
	}
	return out, postgres.Unavailable(br.Close())
}

func seconds(s float64) time.Duration { return time.Duration(max(s, 0) * float64(time.Second)) }

// Requeue turns the DEAD row id back into a due PENDING row with a fresh set of
// attempts (last_error is kept for the record), and notifies Channel so a running
// relay picks it up at once. It returns ErrNotFound or ErrNotDead, wrapped with id.
func (s *Store) Requeue(ctx context.Context, id uuid.UUID) error {
	err := postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
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
	return postgres.Unavailable(err)
}

// RequeueAll requeues every DEAD row, as Requeue does, and returns how many.
func (s *Store) RequeueAll(ctx context.Context) (int, error) {
	var n int64
	err := postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
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
	return int(n), postgres.Unavailable(err)
}

const requeueSQL = `UPDATE outbox SET status = 'PENDING', attempts = 0, next_attempt_at = now() WHERE status = 'DEAD'`

func notify(ctx context.Context, tx *postgres.Tx) error {
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
		return 0, fmt.Errorf("delete published outbox rows: %w", postgres.Unavailable(err))
	}
	return int(tag.RowsAffected()), nil
}
