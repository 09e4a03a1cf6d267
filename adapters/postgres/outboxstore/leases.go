package outboxstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
)

// Heartbeat implements partition.Store, in one transaction: the replica's row in
// outbox_relays is renewed (expired ones are deleted: they count no more),
// its leases are renewed, and then it gives up the partitions past its fair
// share (its highest ones) or takes free or expired ones up to it (the
// lowest; SKIP LOCKED, so two replicas taking at once take different ones).
// Shares are computed from the replicas alive, so when one joins the others
// give up partitions at their next heartbeat and it takes them at its next;
// when one stops (Release) or dies (expiry) the others take its partitions.
func (s *Store) Heartbeat(ctx context.Context, owner string, ttl time.Duration) (partition.Assignment, error) {
	var a partition.Assignment
	ms := ttl.Milliseconds()
	err := postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
		var b pgx.Batch
		b.Queue(`INSERT INTO outbox_relays (id, heartbeat_at, expires_at) VALUES ($1, now(), now() + $2 * interval '1 millisecond')
ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at, expires_at = EXCLUDED.expires_at`, owner, ms)
		b.Queue(`DELETE FROM outbox_relays WHERE expires_at < now()`)
		b.Queue(`SELECT partitions, ARRAY(SELECT id FROM outbox_relays) FROM outbox_partitioning`)
		b.Queue(`UPDATE outbox_leases SET expires_at = now() + $2 * interval '1 millisecond' WHERE owner = $1 RETURNING partition`, owner, ms)
		br := tx.SendBatch(ctx, &b)
		defer br.Close()
		for range 2 {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("renew membership: %w", err)
			}
		}
		var members []string
		if err := br.QueryRow().Scan(&a.Partitions, &members); err != nil {
			return fmt.Errorf("read partitions: %w", err)
		}
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("renew leases: %w", err)
		}
		mine, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return fmt.Errorf("renew leases: %w", err)
		}
		if err := br.Close(); err != nil {
			return err
		}
		slices.Sort(mine)
		a.Replicas = len(members)

		share := partition.FairShare(a.Partitions, members, owner)
		switch {
		case len(mine) > share:
			extra := mine[share:]
			if _, err := tx.Exec(ctx, `UPDATE outbox_leases SET owner = NULL, expires_at = '-infinity'
WHERE owner = $1 AND partition = ANY($2)`, owner, extra); err != nil {
				return fmt.Errorf("release leases: %w", err)
			}
			a.Released, mine = len(extra), mine[:share]
		case len(mine) < share:
			rows, err := tx.Query(ctx, `UPDATE outbox_leases SET owner = $1, expires_at = now() + $2 * interval '1 millisecond'
WHERE partition IN (
    SELECT partition FROM outbox_leases
    WHERE (owner IS NULL OR expires_at < now()) AND partition < $3
    ORDER BY partition LIMIT $4
    FOR UPDATE SKIP LOCKED)
RETURNING partition`, owner, ms, a.Partitions, share-len(mine))
			if err != nil {
				return fmt.Errorf("take leases: %w", err)
			}
			took, err := pgx.CollectRows(rows, pgx.RowTo[int])
			if err != nil {
				return fmt.Errorf("take leases: %w", err)
			}
			a.Took = len(took)
			mine = append(mine, took...)
			slices.Sort(mine)
		}
		a.Owned = mine
		// Tell the other replicas now, rather than at their next heartbeat,
		// when there is something for them to do: partitions this one gave
		// up, or partitions it still lacks (others hold more than their
		// share, or hold them on expired leases).
		if a.Released > 0 || len(mine) < share {
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, RebalancePayload); err != nil {
				return fmt.Errorf("notify rebalance: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return partition.Assignment{}, fmt.Errorf("outbox lease heartbeat: %w", postgres.Unavailable(err))
	}
	return a, nil
}

// Release implements partition.Store.
func (s *Store) Release(ctx context.Context, owner string) error {
	err := postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
		var b pgx.Batch
		b.Queue(`UPDATE outbox_leases SET owner = NULL, expires_at = '-infinity' WHERE owner = $1`, owner)
		b.Queue(`DELETE FROM outbox_relays WHERE id = $1`, owner)
		b.Queue(`SELECT pg_notify($1, $2)`, Channel, RebalancePayload)
		return tx.SendBatch(ctx, &b).Close()
	})
	if err != nil {
		return fmt.Errorf("outbox lease release: %w", postgres.Unavailable(err))
	}
	return nil
}

// Leases returns each partition's lease owner ("" when nobody holds it or
// the lease expired): what `payments outbox stats` prints, and tests read.
func (s *Store) Leases(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT partition, CASE WHEN expires_at > now() THEN COALESCE(owner, '') ELSE '' END
FROM outbox_leases ORDER BY partition`)
	if err != nil {
		return nil, fmt.Errorf("outbox leases: %w", postgres.Unavailable(err))
	}
	var owners []string
	var p int
	var o string
	_, err = pgx.ForEachRow(rows, []any{&p, &o}, func() error {
		owners = append(owners, o)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox leases: %w", postgres.Unavailable(err))
	}
	return owners, nil
}
