// Package relay is the second half of the transactional outbox: it moves the
// events that the write side committed to the outbox table onto the broker.
//
// The write side never talks to the broker; it only commits outbox rows with its
// state change. The relay claims due PENDING rows in a transaction (SELECT … FOR
// UPDATE SKIP LOCKED, so any number of replicas share the table without waiting on
// each other), publishes them, and in the same transaction marks each row the
// broker acknowledged PUBLISHED and schedules a retry, with exponential backoff and
// jitter, for each row it did not. After MaxAttempts, or at once when the broker
// refused the message itself (Permanent), a row becomes DEAD: kept, counted,
// requeueable, and out of the way of the rows behind it.
//
// # The at-least-once window
//
// Publishing and marking cannot be atomic: the broker and the database commit
// separately. The relay publishes first and marks second, so a crash (or a lost
// database connection) after the broker's ACK and before the commit leaves those
// rows PENDING; they are published again by the next claim. Consumers therefore see
// each event at least once and deduplicate by the event id (the outbox row id).
// The opposite order would lose events, which a payments system cannot accept.
// Outside that window no row is published twice: a row is locked by exactly one
// claim transaction until it is marked.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/application/backlog"
)

// Message is one outbox row as the relay sees it. Payload is the complete
// CloudEvents document the write side stored; the relay publishes it verbatim.
type Message struct {
	ID        uuid.UUID
	Type      string
	Payload   []byte
	Attempts  int       // failed publish attempts so far
	CreatedAt time.Time // commit time of the event, for the latency metric
	// TraceParent and TraceState are the W3C trace context of the write that
	// committed the event (empty when it was not traced). The publisher sends
	// them with the message, so the consumer continues that trace.
	TraceParent, TraceState string
}

// Permanent marks err as a publish failure no retry can fix — the broker refused
// the message itself (too large, malformed), not the moment (throttling, an
// outage). The relay makes such a row DEAD at once instead of retrying it
// MaxAttempts times over the backoff; an operator fixes the cause and requeues it.
// Publishers wrap only what they know to be permanent: when in doubt, retry.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err, or an error it wraps, was marked Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Failure records one message the broker did not acknowledge.
type Failure struct {
	ID    uuid.UUID
	Error string
	// NextAttemptAt is when the message is due again; ignored for dead messages.
	NextAttemptAt time.Time
}

// Outcome is what to write back for a claimed batch, in the claim transaction.
type Outcome struct {
	PublishedAt time.Time
	Published   []uuid.UUID // acknowledged by the broker: mark PUBLISHED
	Retry       []Failure   // not acknowledged: attempts+1, last_error, next_attempt_at
	Dead        []Failure   // not acknowledged for the last time: attempts+1, DEAD
}

// Store is the outbox table, as the relay needs it.
type Store interface {
	// ClaimBatch locks up to limit due PENDING messages, oldest due first, skipping
	// rows other transactions hold (FOR UPDATE SKIP LOCKED), and calls fn with them
	// while holding the locks. It then writes the Outcome fn returns and commits.
	// It returns how many messages it claimed (0 when none are due; fn is not
	// called then). If fn returns an error, or ctx ends before the commit, the
	// transaction rolls back and every claimed row stays PENDING as it was.
	ClaimBatch(ctx context.Context, limit int, fn func([]Message) (Outcome, error)) (int, error)
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

// Config tunes a Relay. Zero fields take the defaults named on each.
type Config struct {
	BatchSize    int           // rows per claim transaction; default 100
	MaxAttempts  int           // failed publishes before DEAD; default 10
	PollInterval time.Duration // safety-net poll when no wake-up arrives; default 1s
	// Workers is how many claim loops run at once. Each holds one database
	// connection while its batch is published, so several keep the broker busy
	// while one waits on the database. Default 4.
	Workers     int
	BackoffBase time.Duration // delay after the first failure; default 1s
	BackoffMax  time.Duration // ceiling of the delay; default 5m
	// PublishTimeout bounds one batch's publish, also during shutdown when the
	// in-flight batch is allowed to finish. Default 30s.
	PublishTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 10
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 5 * time.Minute
	}
	if c.BackoffMax < c.BackoffBase {
		c.BackoffMax = c.BackoffBase
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = 30 * time.Second
	}
	return c
}

// Relay drains the outbox to the broker. Build it with New, start it with Run, and
// call Wake whenever a new row may be waiting (a NOTIFY arrived).
type Relay struct {
	cfg     Config
	store   Store
	pub     Publisher
	log     *slog.Logger
	metrics Metrics
	now     func() time.Time
	// wake holds one pending wake-up per worker; sends never block, so a burst of
	// notifications collapses into at most Workers claims.
	wake chan struct{}

	randMu sync.Mutex
	rand   *rand.Rand
}

// New builds a Relay. metrics may be nil (nothing is recorded); now is the clock,
// injected so tests control backoff schedules.
func New(cfg Config, store Store, pub Publisher, log *slog.Logger, metrics Metrics, now func() time.Time) *Relay {
	cfg = cfg.withDefaults()
	if now == nil {
		now = time.Now
	}
	if metrics == nil {
		metrics = noMetrics{}
	}
	return &Relay{
		cfg:     cfg,
		store:   store,
		pub:     pub,
		log:     log,
		metrics: metrics,
		now:     now,
		wake:    make(chan struct{}, cfg.Workers),
		rand:    rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
	}
}

// Wake asks an idle worker to claim now instead of at its next poll. It never
// blocks and is safe from any goroutine (the LISTEN loop calls it per NOTIFY).
func (r *Relay) Wake() {
	select {
	case r.wake <- struct{}{}:
	default: // enough wake-ups already pending
	}
}

// Run claims and publishes until ctx ends, then returns nil. Database and broker
// failures are logged and retried at the next poll: an outage delays events, never
// stops the relay. On cancellation each worker lets its in-flight batch finish
// (bounded by PublishTimeout) so acknowledged rows are marked, and claims no more.
func (r *Relay) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	for range r.cfg.Workers {
		g.Go(func() error {
			r.work(ctx)
			return nil
		})
	}
	return g.Wait()
}

func (r *Relay) work(ctx context.Context) {
	poll := time.NewTimer(0) // claim once at start: rows may be waiting already
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-poll.C:
		}
		// Drain while batches come back full: a backlog is worked at once, not
		// one batch per poll. A full batch also wakes another worker to help.
		for ctx.Err() == nil {
			n, err := r.Step(ctx)
			if err != nil {
				r.log.WarnContext(ctx, "outbox relay: claim failed; retrying at next poll", "err", err)
				break
			}
			if n < r.cfg.BatchSize {
				break
			}
			r.Wake()
		}
		poll.Reset(r.cfg.PollInterval)
	}
}

// Step claims one batch, publishes it and records the outcome. It returns how many
// messages it claimed. Exported so tests and benchmarks can drive the relay one
// batch at a time.
func (r *Relay) Step(ctx context.Context) (int, error) {
	// The claim transaction and the publish must not be torn by shutdown halfway:
	// an acknowledged message whose mark is rolled back would be published again.
	// So the batch runs on a context that outlives ctx by at most PublishTimeout;
	// ctx only stops the next claim.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.PublishTimeout)
	defer cancel()
	n, err := r.store.ClaimBatch(bctx, r.cfg.BatchSize, func(msgs []Message) (Outcome, error) {
		return r.publish(bctx, msgs), nil
	})
	if err != nil {
		return n, fmt.Errorf("claim outbox batch: %w", err)
	}
	return n, nil
}

// publish sends one claimed batch and turns the broker's per-message answers into
// the Outcome to commit.
func (r *Relay) publish(ctx context.Context, msgs []Message) Outcome {
	start := r.now()
	errs := r.pub.Publish(ctx, msgs)
	acked := r.now()
	r.metrics.PublishCall(acked.Sub(start))

	out := Outcome{PublishedAt: acked, Published: make([]uuid.UUID, 0, len(msgs))}
	var firstErr error
	for i, m := range msgs {
		var err error
		if i < len(errs) {
			err = errs[i]
		} else {
			err = fmt.Errorf("publisher returned no result for message %d", i)
		}
		if err == nil {
			out.Published = append(out.Published, m.ID)
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
			out.Dead = append(out.Dead, f)
			r.metrics.Dead()
			why := "outbox message dead after max attempts; requeue it once the cause is fixed"
			if permanent {
				why = "outbox message dead: the broker refused it and retrying cannot help; requeue it once the cause is fixed"
			}
			r.log.ErrorContext(ctx, why, "id", m.ID, "type", m.Type, "attempts", attempts, "err", err)
			continue
		}
		f.NextAttemptAt = acked.Add(r.backoff(attempts))
		out.Retry = append(out.Retry, f)
	}
	if len(out.Retry) > 0 {
		// One line per batch, not per message: a broker outage fails every row.
		r.log.WarnContext(ctx, "outbox publish failed; will retry with backoff",
			"failed", len(out.Retry), "batch", len(msgs), "first_err", firstErr)
	}
	return out
}

func (r *Relay) backoff(attempts int) time.Duration {
	r.randMu.Lock()
	f := r.rand.Float64()
	r.randMu.Unlock()
	return backlog.Backoff(attempts, r.cfg.BackoffBase, r.cfg.BackoffMax, f)
}
