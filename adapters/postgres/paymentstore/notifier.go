package paymentstore

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// Notifier wakes the outbox relays — of every process, through LISTEN/NOTIFY
// on postgres.OutboxChannel — after writes commit outbox rows: one NOTIFY per burst of
// commits, sent after them, instead of one inside each write transaction.
//
// Why not inside the transaction: Postgres queues a notification at commit
// under a lock global to the database, so every transaction that sends one
// commits after the other, and under load the writes queue for that lock.
// Sent by one goroutine after the commits,
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

// Signal records that outbox rows have committed. It never blocks;
// Notifying calls it after each write's commit.
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

// Notifying returns repo with n signalled after each write that committed
// outbox rows, so that idle relays wake at once instead of at their next
// poll; the repository itself knows nothing of the relays. The signal is
// sent after the commit, never before: a relay woken earlier could claim
// before the rows are visible and go back to sleep. With a nil n repo is
// returned as it is, and the relays' poll finds the rows.
func Notifying(repo payments.Repository, n *Notifier) payments.Repository {
	if n == nil {
		return repo
	}
	return notifying{Repository: repo, n: n}
}

// notifying signals after Create and Update; Get passes through.
type notifying struct {
	payments.Repository
	n *Notifier
}

func (r notifying) Create(ctx context.Context, p *payment.Payment, msgs []outbox.Message, key *idempotency.Key) (payments.Committed, error) {
	c, err := r.Repository.Create(ctx, p, msgs, key)
	r.committed(c, err, len(msgs))
	return c, err
}

func (r notifying) Update(ctx context.Context, id payment.ID, key *idempotency.Key, fn func(*payment.Payment) (payments.Change, error)) (payments.Committed, error) {
	rows := 0
	c, err := r.Repository.Update(ctx, id, key, func(p *payment.Payment) (payments.Change, error) {
		change, err := fn(p)
		rows = len(change.Outbox)
		return change, err
	})
	r.committed(c, err, rows)
	return c, err
}

// committed signals when a write committed rows: it succeeded, was not a
// replay (which writes nothing), and had messages.
func (r notifying) committed(c payments.Committed, err error, rows int) {
	if err == nil && !c.Replayed && rows > 0 {
		r.n.Signal()
	}
}
