package outboxstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payments-outbox/payments-outbox/adapters/postgres"
)

// MaxPartitions is the most partitions the outbox may have (the
// outbox_partitioning CHECK).
const MaxPartitions = 1024

// Partitions returns the outbox's partition count.
func (s *Store) Partitions(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT partitions FROM outbox_partitioning`).Scan(&n); err != nil {
		return 0, fmt.Errorf("outbox partition count: %w", err)
	}
	return n, nil
}

// pendingIndexes are the two per-partition pending indexes for a partition
// count: their names and definitions, as the payments migration creates them
// for 64.
func pendingIndexes(n int) [][2]string {
	return [][2]string{
		{fmt.Sprintf("outbox_pending_p%d_idx", n), fmt.Sprintf(
			`ON outbox (outbox_partition(aggregate_id, %d), next_attempt_at, created_at) WHERE status = 'PENDING'`, n)},
		{fmt.Sprintf("outbox_ordered_p%d_idx", n), fmt.Sprintf(
			`ON outbox (outbox_partition(aggregate_id, %d), seq) WHERE status = 'PENDING'`, n)},
	}
}

// SetPartitions changes the partition count to n while relays run and the
// service writes, in four steps, each logged to progress:
//
//  1. build the pending indexes for n beside the current ones, CONCURRENTLY
//     (writes go on; an index a failed earlier attempt left invalid is
//     dropped and built again);
//  2. in one transaction, record n and replace the leases with n free ones;
//  3. wait until every live relay has heartbeated since, and so claims by
//     the new count (a relay that stopped heartbeating is waited for until
//     its membership expires);
//  4. drop the old count's indexes, CONCURRENTLY (which waits for claims
//     still using them).
//
// Between steps 2 and 3 relays on the old count and on the new one may claim
// the same rows; the row locks keep that safe in both modes (unordered claims
// skip each other's rows, ordered claims wait for them), exactly as when a
// lease changes hands. Running it again after a failure resumes it.
func (s *Store) SetPartitions(ctx context.Context, n int, progress func(string)) error {
	if n < 1 || n > MaxPartitions {
		return fmt.Errorf("partition count %d: want 1 to %d", n, MaxPartitions)
	}
	old, err := s.Partitions(ctx)
	if err != nil {
		return err
	}
	for _, ix := range pendingIndexes(n) {
		var valid *bool
		err := s.pool.QueryRow(ctx, `SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = $1`, ix[0]).Scan(&valid)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("look up index %s: %w", ix[0], err)
		}
		if valid != nil && *valid {
			continue
		}
		if valid != nil { // left invalid by an interrupted build
			if _, err := s.pool.Exec(ctx, `DROP INDEX CONCURRENTLY `+ix[0]); err != nil {
				return fmt.Errorf("drop invalid index %s: %w", ix[0], err)
			}
		}
		progress("building index " + ix[0])
		if _, err := s.pool.Exec(ctx, `CREATE INDEX CONCURRENTLY `+ix[0]+` `+ix[1]); err != nil {
			return fmt.Errorf("build index %s: %w", ix[0], err)
		}
	}

	var switched time.Time
	if old != n {
		err = postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
			var b pgx.Batch
			b.Queue(`UPDATE outbox_partitioning SET partitions = $1`, n)
			b.Queue(`DELETE FROM outbox_leases`)
			b.Queue(`INSERT INTO outbox_leases (partition) SELECT generate_series(0, $1 - 1)`, n)
			return tx.SendBatch(ctx, &b).Close()
		})
		if err != nil {
			return fmt.Errorf("switch to %d partitions: %w", n, err)
		}
		progress(fmt.Sprintf("switched from %d to %d partitions; waiting for every relay to heartbeat", old, n))
	}
	// Every relay whose heartbeat started after this instant claims by n.
	if err := s.pool.QueryRow(ctx, `SELECT now()`).Scan(&switched); err != nil {
		return err
	}
	for {
		var behind int
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM outbox_relays WHERE heartbeat_at < $1 AND expires_at > now()`, switched).Scan(&behind)
		if err != nil {
			return fmt.Errorf("wait for relays: %w", err)
		}
		if behind == 0 {
			break
		}
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}

	rows, err := s.pool.Query(ctx, `SELECT indexname FROM pg_indexes
WHERE tablename = 'outbox' AND indexname ~ '^outbox_(pending|ordered)_p[0-9]+_idx$'`)
	if err != nil {
		return fmt.Errorf("list pending indexes: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list pending indexes: %w", err)
	}
	keep := map[string]bool{}
	for _, ix := range pendingIndexes(n) {
		keep[ix[0]] = true
	}
	for _, name := range names {
		if keep[name] {
			continue
		}
		progress("dropping index " + name)
		if _, err := s.pool.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+pgx.Identifier{name}.Sanitize()); err != nil {
			return fmt.Errorf("drop index %s: %w", name, err)
		}
	}
	progress(fmt.Sprintf("done: %d partitions", n))
	return nil
}
