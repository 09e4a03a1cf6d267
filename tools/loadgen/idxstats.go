package main

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// indexReads is how many index entries scans of the outbox's indexes have
// read so far, by Postgres's own counters: what claims step over, a figure
// the machine's load does not move. Backends report their counters when they
// exit or every second or so, so the caller closes the relays' pools and
// this waits a moment before reading.
func indexReads(ctx context.Context, db *pgxpool.Pool, settle bool) (int64, error) {
	if settle {
		t := time.NewTimer(1500 * time.Millisecond) // the statistics' flush interval, not synchronisation
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		}
	}
	var n int64
	err := db.QueryRow(ctx, `SELECT COALESCE(sum(idx_tup_read), 0)::bigint FROM pg_stat_user_indexes WHERE relname = 'outbox'`).Scan(&n)
	return n, err
}
