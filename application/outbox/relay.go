package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/claimloop"
)

// The relay is the second half of the pattern, and this file is all of it:
// claim the due PENDING rows in a transaction (SELECT … FOR UPDATE SKIP
// LOCKED LIMIT n, adapters/postgres/outboxstore), publish them, and in the
// same transaction mark each row the broker acknowledged PUBLISHED and
// reschedule, with exponential backoff and jitter, each one it did not.
// After MaxAttempts, or at once when the broker refused the message itself
// (Permanent), a row becomes DEAD: kept, counted, requeueable, and out of
// the way of the rows behind it. SKIP LOCKED is what lets any number of
// replicas run this side by side, each claiming rows the others do not hold.
//
// Invariants, and why:
//   - Publish first, mark second. The broker and the database commit
//     separately, so a crash (or a lost connection) after the broker's ACK
//     and before the commit leaves those rows PENDING, and the next claim
//     publishes them again: consumers see each event at least once and
//     deduplicate by its id. The opposite order would lose events, which a
//     payments system cannot accept.
//   - Outside that window no row is published twice: a row is locked by one
//     claim transaction until it is marked.
//   - Only an explicit nil from the Publisher marks a row PUBLISHED.
//   - A stop lets the batch in hand finish (within PublishTimeout): an
//     acknowledged row whose mark was rolled back would be published again.
//   - A broker slower than PublishTimeout slows the relay, never stops it:
//     the publish ends early enough for the claim to write what the broker
//     answered, and the batch shrinks until the broker answers it in time
//     (batchsize.go).
//
// What a deployment adds around this loop wraps the Store, and the relay
// does not know it: tracing (adapters/tracing), a bound on the claims at
// work in the database at once (application/outbox/turns), and ordered
// mode's partitions and leases (application/outbox/partition).

// Store is the outbox table, as the relay needs it.
type Store interface {
	// Claim is one claim transaction. It locks up to limit PENDING messages
	// that are due, oldest due first, skipping those another claim holds,
	// calls publish with them while it holds the locks, writes the Result
	// publish returns and commits. It returns how many messages it locked;
	// with none, it does not call publish.
	//
	// ctx's cancellation stops a claim only until it has locked rows. From
	// then on the claim runs on a context with ctx's values and deadline but
	// not its cancellation, which it hands publish: a stop lets the batch in
	// hand finish, so that every row the broker acknowledged is marked. Past
	// the deadline, or if the commit fails, nothing is written and every
	// claimed message stays PENDING as it was.
	Claim(ctx context.Context, limit int, publish func(context.Context, []Message) Result) (int, error)
}

// Publisher is the broker, as the relay needs it.
type Publisher interface {
	// Publish sends msgs and returns one error per message, in the same order:
	// nil for a message the broker acknowledged, the reason otherwise. When the
	// whole call fails every entry carries the error. It must never report nil for
	// a message it does not know to be acknowledged: that row would be marked
	// PUBLISHED and the event lost.
	Publish(ctx context.Context, msgs []Message) []error
}

// Result is what a claim writes back for the batch it claimed.
type Result struct {
	PublishedAt time.Time
	Published   []uuid.UUID // acknowledged by the broker: PUBLISHED
	Retry       []Failure   // not acknowledged: attempts+1, last_error, next_attempt_at
	Dead        []Failure   // not acknowledged for the last time: attempts+1, last_error, DEAD
}

// Failure is one message the broker did not acknowledge.
type Failure struct {
	ID    uuid.UUID
	Error string
	// NextAttemptAt is when the message is due again; ignored for dead messages.
	NextAttemptAt time.Time
}

// Relay drains the outbox to the broker. Build it with NewRelay, start it
// with Run, and call Wake whenever a new row may be waiting (a NOTIFY
// arrived).
type Relay struct {
	cfg     Config
	store   Store
	pub     Publisher
	log     *slog.Logger
	metrics Metrics
	now     func() time.Time
	backoff *claimloop.Schedule
	batch   *batchSize
	// wake holds one pending wake-up per worker; a burst of wake-ups
	// collapses into at most Workers claims.
	wake chan struct{}
}

// NewRelay builds a Relay. metrics may be nil (nothing is recorded); now is
// the clock of the backoff schedule and the latency metric (time.Now if
// nil), injected so that tests control them.
func NewRelay(store Store, pub Publisher, log *slog.Logger, metrics Metrics, now func() time.Time, cfg Config) *Relay {
	cfg = cfg.withDefaults()
	if now == nil {
		now = time.Now
	}
	if metrics == nil {
		metrics = noMetrics{}
	}
	metrics.BatchSize(cfg.BatchSize)
	return &Relay{cfg: cfg, store: store, pub: pub, log: log, metrics: metrics, now: now,
		backoff: claimloop.NewSchedule(cfg.BackoffBase, cfg.BackoffMax),
		batch:   newBatchSize(cfg.BatchSize),
		wake:    make(chan struct{}, cfg.Workers)}
}

// Wake asks an idle worker to claim now instead of at its next poll. It never
// blocks and is safe from any goroutine (the LISTEN loop calls it per NOTIFY).
func (r *Relay) Wake() {
	select {
	case r.wake <- struct{}{}:
	default: // enough wake-ups pending already
	}
}

// Run claims and publishes until ctx ends, then returns nil. Each of
// Config.Workers workers claims at start, whenever Wake wakes it and at
// every PollInterval; while its batches come back full it claims again at
// once and wakes one more worker, so that a backlog has them all at work. A
// database or broker failure is logged and tried again at the next poll: an
// outage delays events, never stops the relay. When ctx ends each worker
// lets its batch in hand finish and claims no more.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range r.cfg.Workers {
		wg.Go(func() { r.work(ctx) })
	}
	wg.Wait()
	return nil
}

func (r *Relay) work(ctx context.Context) {
	poll := time.NewTimer(0) // rows may be waiting already
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-poll.C:
		}
		for ctx.Err() == nil {
			_, full, err := r.step(ctx)
			if err != nil {
				if ctx.Err() == nil { // not a claim the stop cut short
					r.log.WarnContext(ctx, "outbox relay: claim failed; retrying at the next poll", "err", err)
				}
				break
			}
			if !full {
				break
			}
			r.Wake() // a full batch: more are waiting
		}
		poll.Reset(r.cfg.PollInterval)
	}
}

// Step claims one batch, publishes it and writes back what the broker
// answered, in one claim transaction, and returns how many messages it
// claimed. The batch is Config.BatchSize rows, or fewer while the broker
// answers slower than the deadline (batchsize.go). Run calls it; tests and
// benchmarks drive the relay with it, one batch at a time.
func (r *Relay) Step(ctx context.Context) (int, error) {
	n, _, err := r.step(ctx)
	return n, err
}

// step is Step, and reports whether the batch came back full: more rows
// are likely waiting.
func (r *Relay) step(ctx context.Context) (n int, full bool, err error) {
	limit := r.batch.get()
	ctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	var late atomic.Bool // a claim may publish more than once (ordered mode's)
	n, err = r.store.Claim(ctx, limit, func(ctx context.Context, msgs []Message) Result {
		res, ranLate := r.publish(ctx, msgs)
		if ranLate {
			late.Store(true)
		}
		return res
	})
	r.resize(ctx, limit, n, late.Load())
	if err != nil {
		return n, false, fmt.Errorf("claim outbox batch: %w", err)
	}
	return n, n >= limit, nil
}

// resize adapts the batch size to how the claim of limit rows went
// (batchSize.adapt) and reports a change.
func (r *Relay) resize(ctx context.Context, limit, n int, late bool) {
	size, changed := r.batch.adapt(limit, n, late)
	if !changed {
		return
	}
	r.metrics.BatchSize(size)
	switch {
	case late:
		r.log.WarnContext(ctx, "outbox relay: the broker did not answer a batch within its deadline; batch size halved",
			"batch_size", size, "max_batch_size", r.cfg.BatchSize, "publish_timeout", r.cfg.PublishTimeout)
	case size == r.cfg.BatchSize:
		r.log.InfoContext(ctx, "outbox relay: the broker answers in time again; batch size back to its maximum", "batch_size", size)
	}
}

// publish sends one claimed batch and turns the broker's answer for each
// message into its mark: PUBLISHED, a retry after a backoff, or DEAD. The
// broker gets until publishDeadline, so that the claim has time to write
// that answer; late reports that it ran out of it.
func (r *Relay) publish(ctx context.Context, msgs []Message) (res Result, late bool) {
	pctx := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		pctx, cancel = context.WithDeadline(ctx, publishDeadline(d, r.cfg.PublishTimeout))
		defer cancel()
	}
	start := r.now()
	errs := r.pub.Publish(pctx, msgs)
	late = pctx.Err() != nil
	acked := r.now()
	r.metrics.PublishCall(acked.Sub(start))

	res = Result{PublishedAt: acked, Published: make([]uuid.UUID, 0, len(msgs))}
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
		if permanent := errors.Is(err, ErrPermanent); permanent || attempts >= r.cfg.MaxAttempts {
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
	return res, late
}
