package paymentstore

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
)

// Notifier wakes the outbox relays — of every process, through LISTEN/NOTIFY
// on postgres.OutboxChannel — after writes commit outbox rows: one NOTIFY per burst of
// commits, sent after them, instead of one inside each write transaction.
//
// Why not inside the transaction: Postgres queues a notification at commit
// under a lock global to the database, so every transaction that sends one
// commits after the other, and under load the writes queue for that lock
// (the cost: docs/BENCHMARKS.md). Sent by one goroutine after the commits,
// the NOTIFY waits on nobody but itself, and under load one notification
// answers every commit signalled while the previous one was on its way.
//
// A NOTIFY is only a hint: if one is lost (or the server is briefly away),
// the relays' poll finds the rows.
type Notifier struct {
	pool    *pgxpool.Pool
	log     *slog.Logger
	pending chan struct{} // one pending wake-up; more Signals fold into it
}

// minGap is the least time between two notifications: what it adds to a
// relay's wake-up at most, and what bounds the NOTIFY rate at any load.
const minGap = 5 * time.Millisecond

// NewNotifier returns a Notifier on pool; start it with Run.
func NewNotifier(pool *pgxpool.Pool, log *slog.Logger) *Notifier {
	return &Notifier{pool: pool, log: log, pending: make(chan struct{}, 1)}
}

// Signal records that outbox rows have committed. It never blocks; the
// Repository calls it after each write's commit.
func (n *Notifier) Signal() {
	select {
	case n.pending <- struct{}{}:
	default: // a NOTIFY not yet sent covers this commit too
	}
}

// Run sends the notifications until ctx ends, then returns nil. Each NOTIFY
// is sent after taking the wake-up it answers, so it commits after every
// write that signalled before: a relay it wakes sees those rows.
func (n *Notifier) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-n.pending:
		}
		if _, err := n.pool.Exec(ctx, `SELECT pg_notify($1, '')`, postgres.OutboxChannel); err != nil && ctx.Err() == nil {
			n.log.WarnContext(ctx, "outbox notify failed; the relays' poll will find the rows", "err", err)
		}
		// Under load, commits signal again at once; the pause lets a burst
		// gather into one NOTIFY instead of a NOTIFY transaction per round
		// trip, which costs Postgres about as much as the writes themselves.
		t := time.NewTimer(minGap)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
