// Package relay is the second half of the transactional outbox: it moves the
// events that the write side committed to the outbox table onto the broker.
// The write side never talks to the broker; it only commits outbox rows with
// its state change.
//
// The loop is the textbook one (this file): claim due PENDING rows in a
// transaction, publish them, and in the same transaction mark each row the
// broker acknowledged PUBLISHED and reschedule, with exponential backoff and
// jitter, each one it did not. After MaxAttempts, or at once when the broker
// refused the message itself (Permanent), a row becomes DEAD: kept, counted,
// requeueable, and out of the way of the rows behind it.
//
// Invariants, and why:
//   - Publish first, mark second. The broker and the database commit
//     separately, so a crash (or a lost connection) after the broker's ACK
//     and before the commit leaves those rows PENDING, and the next claim
//     publishes them again: consumers see each event at least once and
//     deduplicate by the event id (the outbox row id). The opposite order
//     would lose events, which a payments system cannot accept.
//   - Outside that window no row is published twice: a row is locked by one
//     claim transaction until it is marked.
//   - Only an explicit nil from the Publisher marks a row PUBLISHED.
//   - A stop lets the batch in hand finish (within PublishTimeout): an
//     acknowledged row whose mark was rolled back would be published again.
//
// Beside the loop, one file each, is what lets replicas share the table:
// leases divide the outbox's partitions between the replicas (lease.go), a
// replica's workers divide its partitions between them (partition.go), and
// turns bound the claim transactions at work in the database (turns.go).
// Ordered mode (Config.Ordered) is in the store's claim (Claim.Ordered),
// which keeps each aggregate's rows in write order.
package relay

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/claimloop"
	"github.com/payments-outbox/payments-outbox/application/outbox"
)

// Relay drains the outbox to the broker. Build it with New, start it with Run,
// and call Wake whenever a new row may be waiting (a NOTIFY arrived).
type Relay struct {
	cfg     Config
	store   Store
	pub     Publisher
	log     *slog.Logger
	metrics Metrics
	now     func() time.Time
	backoff *claimloop.Schedule
	loop    *claimloop.Loop // the workers: wake-ups, polls, draining a backlog
	leases  *leases         // the partitions this replica may claim from
	turns   *turns          // this replica's share of Config.ActiveClaims
}

// New builds a Relay. metrics may be nil (nothing is recorded); now is the
// clock of the backoff schedule and the latency metric (time.Now if nil),
// injected so that tests control them. Leases run on the real clock.
func New(store Store, pub Publisher, log *slog.Logger, metrics Metrics, now func() time.Time, cfg Config) *Relay {
	cfg = cfg.withDefaults()
	if now == nil {
		now = time.Now
	}
	if metrics == nil {
		metrics = noMetrics{}
	}
	r := &Relay{
		cfg: cfg, store: store, pub: pub, log: log, metrics: metrics, now: now,
		backoff: claimloop.NewSchedule(cfg.BackoffBase, cfg.BackoffMax),
		leases:  newLeases(),
		turns:   newTurns(cfg.ActiveClaims),
	}
	shares := workerShares{workers: cfg.Workers, owned: r.Owned, step: r.step}
	r.loop = claimloop.New(shares, func(ctx context.Context, err error) {
		r.log.WarnContext(ctx, "outbox relay: claim failed; retrying at next poll", "err", err)
	}, claimloop.Config{Workers: cfg.Workers, BatchSize: cfg.BatchSize, PollInterval: cfg.PollInterval})
	return r
}

// Wake asks an idle worker to claim now instead of at its next poll. It never
// blocks and is safe from any goroutine (the LISTEN loop calls it per NOTIFY).
func (r *Relay) Wake() {
	if r.cfg.Ordered {
		// Every worker claims its own partitions: a sweep over all of them
		// would meet the others' claims and wait for the rows they hold.
		r.loop.WakeAll()
		return
	}
	r.loop.Wake()
}

// Run claims and publishes until ctx ends, then returns nil. Database and broker
// failures are logged and retried at the next poll: an outage delays events, never
// stops the relay. On cancellation each worker lets its in-flight batch finish
// (bounded by PublishTimeout) so acknowledged rows are marked, and claims no more;
// then the relay releases its leases, so the other replicas take its partitions
// at their next heartbeat instead of a lease duration later.
func (r *Relay) Run(ctx context.Context) error {
	// The heartbeat outlives the workers: their in-flight batches finish
	// under renewed leases, and the leases go only when no batch is left.
	hctx, stopHeartbeat := context.WithCancel(context.WithoutCancel(ctx))
	var heartbeat sync.WaitGroup
	heartbeat.Go(func() { r.keepLeases(hctx) })
	_ = r.loop.Run(ctx)
	stopHeartbeat()
	heartbeat.Wait()
	r.releaseLeases(ctx)
	return nil
}

// Step claims one batch from the partitions this relay holds (taking its
// leases first when it holds none), publishes it and records the result. It
// returns how many messages it claimed. Exported so tests and benchmarks can
// drive the relay one batch at a time.
func (r *Relay) Step(ctx context.Context) (int, error) {
	partitions, owned := r.Owned()
	if len(owned) == 0 {
		if err := r.Heartbeat(ctx); err != nil {
			return 0, err
		}
		partitions, owned = r.Owned()
	}
	if len(owned) == 0 {
		return 0, nil
	}
	return r.step(ctx, partitions, owned)
}

// step claims the due rows of the partitions parts, publishes them, and
// writes back what the broker answered, in one claim transaction.
func (r *Relay) step(ctx context.Context, partitions int, parts []int) (int, error) {
	// ctx stops only the next claim, and the wait for a turn to make it: the
	// batch runs on a context that outlives ctx by at most PublishTimeout, so
	// a stop never tears a publish from its mark.
	turn, ok := r.turns.take(ctx)
	if !ok {
		return 0, nil
	}
	defer turn.pass()
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.PublishTimeout)
	defer cancel()
	c := Claim{Limit: r.cfg.BatchSize, Partitions: partitions, Owned: parts, Owner: r.cfg.Owner, Ordered: r.cfg.Ordered}
	n, err := r.store.ClaimBatch(bctx, c, func(msgs []outbox.Message) (BatchResult, error) {
		defer turn.passWhilePublishing()()
		return r.publish(bctx, msgs), nil
	})
	if err != nil {
		return n, fmt.Errorf("claim outbox batch: %w", err)
	}
	return n, nil
}

// publish sends one claimed batch and turns the broker's answer for each
// message into its mark: PUBLISHED, a retry after a backoff, or DEAD.
func (r *Relay) publish(ctx context.Context, msgs []outbox.Message) BatchResult {
	start := r.now()
	errs := r.pub.Publish(ctx, msgs)
	acked := r.now()
	r.metrics.PublishCall(acked.Sub(start))

	res := BatchResult{PublishedAt: acked, Published: make([]uuid.UUID, 0, len(msgs))}
	var firstErr error
	for i, m := range msgs {
		var err error
		if i < len(errs) {
			err = errs[i]
		} else {
			err = fmt.Errorf("publisher returned no result for message %d", i)
		}
		if err == nil {
			res.Published = append(res.Published, m.ID)
			r.metrics.Published(max(acked.Sub(m.CreatedAt), 0))
			continue
		}
		r.metrics.PublishFailed()
		if firstErr == nil {
			firstErr = err
		}
		attempts := m.Attempts + 1
		f := Failure{ID: m.ID, Error: err.Error()}
		if permanent := IsPermanent(err); permanent || attempts >= r.cfg.MaxAttempts {
			res.Dead = append(res.Dead, f)
			r.metrics.Dead()
			why := "outbox message dead after max attempts; requeue it once the cause is fixed"
			if permanent {
				why = "outbox message dead: the broker refused it and retrying cannot help; requeue it once the cause is fixed"
			}
			r.log.ErrorContext(ctx, why, "id", m.ID, "type", m.Type, "attempts", attempts, "err", err)
			continue
		}
		f.NextAttemptAt = acked.Add(r.backoff.Delay(attempts))
		res.Retry = append(res.Retry, f)
	}
	if len(res.Retry) > 0 {
		// One line per batch, not per message: a broker outage fails every row.
		r.log.WarnContext(ctx, "outbox publish failed; will retry with backoff",
			"failed", len(res.Retry), "batch", len(msgs), "first_err", firstErr)
	}
	return res
}
