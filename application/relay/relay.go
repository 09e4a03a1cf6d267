// Package relay is the second half of the transactional outbox: it moves the
// events that the write side committed to the outbox table onto the broker.
//
// The write side never talks to the broker; it only commits outbox rows with its
// state change. Each row belongs to a partition of its aggregate (PartitionOf);
// the replicas divide the partitions between them with leases in the database.
// The relay claims PENDING rows of the partitions it holds in a transaction
// (SELECT … FOR UPDATE), publishes them, and in the same transaction marks each row the
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
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/backlog"
)

// Message is one outbox row as the relay sees it. Payload is the complete
// CloudEvents document the write side stored; the relay publishes it verbatim.
// A field added here (a trace context, say) is read by the store's claim and
// passed on by the relay untouched; only the Publisher interprets it.
type Message struct {
	ID uuid.UUID
	// AggregateID is the entity the event is about (the payment): its events
	// keep their order in ordered mode, and it is the FIFO message group.
	AggregateID uuid.UUID
	Type        string
	Payload     []byte
	Attempts    int       // failed publish attempts so far
	CreatedAt   time.Time // commit time of the event, for the latency metric
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

// Claim says which rows one ClaimBatch may take.
type Claim struct {
	Limit int // rows at most
	// Partitions is the partition count Owned refers to (an Assignment's).
	Partitions int
	// Owned are the partitions to claim from, ascending; nil claims from all
	// of them (tests and tools that run a single relay; never a replica).
	Owned []int
	// Ordered asks for ordered mode: rows in write order per partition, at
	// most one row per aggregate, none of an aggregate whose earliest
	// PENDING row is waiting for its retry, and no row skipped because
	// another claim holds it (the claim waits for it instead).
	Ordered bool
}

// Store is the outbox table, as the relay needs it.
type Store interface {
	// ClaimBatch locks up to c.Limit PENDING messages of the partitions c
	// names and calls fn with them while holding the locks. It then writes
	// the Outcome fn returns and commits. If fn returns an error, or ctx ends
	// before the commit, the transaction rolls back and every claimed row
	// stays PENDING as it was.
	//
	// Unordered, it takes due rows, oldest due first, skipping rows other
	// transactions hold (FOR UPDATE SKIP LOCKED). Ordered, it reads the
	// first c.Limit PENDING rows in write order, locking them (waiting for
	// rows another claim holds, so no row overtakes one of its aggregate
	// still at the broker), and passes fn the first of each aggregate, when
	// it is due and the aggregate has no row waiting for a retry.
	//
	// It returns how many rows it locked: fewer than c.Limit when the
	// partitions have no more (fn is not called when none is publishable).
	ClaimBatch(ctx context.Context, c Claim, fn func([]Message) (Outcome, error)) (int, error)

	// Heartbeat records owner as alive for ttl from now and renews the
	// leases it holds for as long, then moves it towards its FairShare of
	// the partitions among the replicas alive: it gives up the partitions
	// past its share, and takes free or expired ones up to it.
	Heartbeat(ctx context.Context, owner string, ttl time.Duration) (Assignment, error)
	// Release gives up every lease of owner and its membership, so that
	// the other replicas take its partitions at their next heartbeat
	// instead of after the leases expire.
	Release(ctx context.Context, owner string) error
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

	// Ordered publishes each aggregate's events in the order they were
	// written (Claim.Ordered): a row the broker refused holds back the rows
	// of its aggregate behind it until it is published or DEAD; other
	// aggregates go on.
	Ordered bool
	// Owner names this replica in the leases; default a random UUID, unique
	// per Relay. Two relays must never share one.
	Owner string
	// LeaseDuration is how long a lease lasts without renewal: the longest a
	// crashed replica's partitions wait before another replica takes them.
	// Default 15s.
	LeaseDuration time.Duration
	// Heartbeat is how often leases are renewed and rebalanced; default a
	// third of LeaseDuration, so two heartbeats may fail before a lease
	// expires.
	Heartbeat time.Duration
	// ActiveClaims is how many claim transactions the replicas together
	// keep at work in the database at once, at least one each: each of n
	// replicas has ActiveClaims/n turns, at least one. Default 2. A
	// transaction is at work from its claim to its commit, unless its
	// publish is still running after a millisecond (or after as long as
	// its claim took, if that was shorter): then it waits on the broker,
	// not the database, and another may start (see Relay, Turns).
	ActiveClaims int
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
	if c.ActiveClaims <= 0 {
		c.ActiveClaims = 2
	}
	if c.Owner == "" {
		c.Owner = uuid.NewString()
	}
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = 15 * time.Second
	}
	if c.Heartbeat <= 0 || c.Heartbeat > c.LeaseDuration/2 {
		c.Heartbeat = c.LeaseDuration / 3
	}
	return c
}

// Relay drains the outbox to the broker. Build it with New, start it with Run, and
// call Wake whenever a new row may be waiting (a NOTIFY arrived).
//
// # Partitions
//
// The relay claims only from the partitions whose leases it holds (Store.
// Heartbeat), and divides them between its workers: worker i claims from
// every Workers-th of them. So no two claim loops, of this replica or
// another, scan the same part of the pending index, and none steps over rows
// another holds. A wake-up (a NOTIFY says only that something committed, not
// where) makes one worker sweep all the replica's partitions in one claim;
// when that comes back full there is a backlog, and every worker drains its
// own partitions until they run dry.
//
// In ordered mode there is no sweep: a wake-up sets every worker claiming
// its own partitions, so no two claims of a replica meet on a partition,
// where one would wait for the rows the other holds.
//
// # Turns
//
// A worker opens its claim transaction only on a turn. The replicas share
// Config.ActiveClaims turns (two by default): each of n replicas, counted by
// the lease heartbeat, has ActiveClaims/n of them, at least one. The worker
// keeps its turn until it commits, or until its publish is waiting on the
// network (still running after a millisecond, or after as long as the claim
// took if that was shorter), whichever comes first. Against a fast broker,
// then, a replica has as many transactions at work in the database as it
// has turns; against a slow one the turn passes on as soon as the batch is
// at the broker, and all the workers publish at once.
//
// Measured (docs/BENCHMARKS.md), what the database pays for is the
// transactions at work on it, not the rows: without turns, eight replicas
// of four workers drained a backlog at half the rate of one, every row
// costing the database twice the CPU. (The rest of what more replicas
// cost was not the relay's: each new connection's page faults on a
// database without huge pages; README, "Scaling the relay".) Turns also
// keep a relay draining a backlog after an outage from taking the cores
// the API needs. No deadlock: a worker waits for a turn only before it
// claims, never with rows locked.
//
// Leases keep the replicas apart; they are not what keeps events in order.
// A replica that lost a lease without knowing (paused past the expiry) may
// still claim from the partition while the new owner does: unordered, SKIP
// LOCKED keeps their batches apart; ordered, the second claim waits on the
// rows the first one locked, so nothing overtakes a row still at the broker.
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
	// drain[i] tells worker i to drain its own partitions: a sweep found a
	// backlog, or the assignment changed.
	drain []chan struct{}
	// rebalance asks the heartbeat loop for a heartbeat now.
	rebalance chan struct{}
	// turns are this replica's share of Config.ActiveClaims.
	turns *turnstile

	mu  sync.Mutex
	asg Assignment
	// validUntil is when the leases of asg expire if no heartbeat renews
	// them, by this process's monotonic clock, measured from before the
	// heartbeat was sent: the database's expiry is never earlier.
	validUntil time.Time

	randMu sync.Mutex
	rand   *rand.Rand
}

// New builds a Relay. metrics may be nil (nothing is recorded); now is the clock,
// injected so tests control backoff schedules. Leases run on the real clock.
func New(cfg Config, store Store, pub Publisher, log *slog.Logger, metrics Metrics, now func() time.Time) *Relay {
	cfg = cfg.withDefaults()
	if now == nil {
		now = time.Now
	}
	if metrics == nil {
		metrics = noMetrics{}
	}
	r := &Relay{
		cfg:       cfg,
		store:     store,
		pub:       pub,
		log:       log,
		metrics:   metrics,
		now:       now,
		wake:      make(chan struct{}, cfg.Workers),
		drain:     make([]chan struct{}, cfg.Workers),
		rebalance: make(chan struct{}, 1),
		turns:     newTurnstile(cfg.ActiveClaims),
		rand:      rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
	}
	for i := range r.drain {
		r.drain[i] = make(chan struct{}, 1)
	}
	return r
}

// Owner is the name this relay holds its leases under.
func (r *Relay) Owner() string { return r.cfg.Owner }

// Wake asks an idle worker to claim now instead of at its next poll. It never
// blocks and is safe from any goroutine (the LISTEN loop calls it per NOTIFY).
func (r *Relay) Wake() {
	if r.cfg.Ordered {
		r.drainAll() // no sweep in ordered mode: see Relay
		return
	}
	select {
	case r.wake <- struct{}{}:
	default: // enough wake-ups already pending
	}
}

// Rebalance asks for a lease heartbeat now instead of at the next interval:
// another replica released partitions or lacks its share (a NOTIFY with the
// store's rebalance payload says so). It never blocks; heartbeats it causes
// are at least a tenth of Config.Heartbeat apart.
func (r *Relay) Rebalance() {
	select {
	case r.rebalance <- struct{}{}:
	default:
	}
}

// drainAll sets every worker draining its own partitions.
func (r *Relay) drainAll() {
	for _, c := range r.drain {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Owned returns the partition count and the partitions this relay holds
// leases on; no partitions once the leases may have expired unrenewed.
func (r *Relay) Owned() (partitions int, owned []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Now().After(r.validUntil) {
		return r.asg.Partitions, nil
	}
	return r.asg.Partitions, r.asg.Owned
}

// share is worker i's part of the owned partitions: every Workers-th.
func (r *Relay) share(i int) (partitions int, mine []int) {
	partitions, owned := r.Owned()
	for j := i; j < len(owned); j += r.cfg.Workers {
		mine = append(mine, owned[j])
	}
	return partitions, mine
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
	heartbeat.Go(func() { r.heartbeatLoop(hctx) })

	var workers sync.WaitGroup
	for i := range r.cfg.Workers {
		workers.Go(func() { r.work(ctx, i) })
	}
	workers.Wait()
	stopHeartbeat()
	heartbeat.Wait()

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.store.Release(rctx, r.cfg.Owner); err != nil {
		r.log.WarnContext(rctx, "outbox relay: releasing leases failed; other replicas take the partitions when the leases expire",
			"owner", r.cfg.Owner, "err", err, "lease_duration", r.cfg.LeaseDuration)
	}
	r.setAssignment(Assignment{}, time.Time{})
	return nil
}

func (r *Relay) heartbeatLoop(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.rebalance:
			if wait := r.cfg.Heartbeat/10 - time.Since(last); wait > 0 {
				// Too soon after the last one: beat once the gap is kept
				// (Reset drops any tick pending on t.C).
				t.Reset(wait)
				continue
			}
		}
		last = time.Now()
		if err := r.Heartbeat(ctx); err != nil && ctx.Err() == nil {
			r.log.WarnContext(ctx, "outbox relay: lease heartbeat failed; retrying", "err", err)
		}
		t.Reset(r.cfg.Heartbeat)
	}
}

// Heartbeat renews and rebalances this relay's leases once (Store.Heartbeat)
// and hands its workers the partitions it now holds. Run calls it every
// Config.Heartbeat; it is exported for tests that drive the relay by Step.
func (r *Relay) Heartbeat(ctx context.Context) error {
	sent := time.Now()
	a, err := r.store.Heartbeat(ctx, r.cfg.Owner, r.cfg.LeaseDuration)
	if err != nil {
		return fmt.Errorf("lease heartbeat: %w", err)
	}
	if a.Took+a.Released > 0 {
		r.metrics.Rebalanced()
		r.log.InfoContext(ctx, "outbox relay: partitions rebalanced",
			"owner", r.cfg.Owner, "owned", len(a.Owned), "took", a.Took, "released", a.Released, "partitions", a.Partitions)
	}
	r.setAssignment(a, sent.Add(r.cfg.LeaseDuration))
	r.turns.share(a.Replicas)
	return nil
}

func (r *Relay) setAssignment(a Assignment, validUntil time.Time) {
	r.mu.Lock()
	changed := a.Partitions != r.asg.Partitions || !slices.Equal(a.Owned, r.asg.Owned)
	r.asg, r.validUntil = a, validUntil
	r.mu.Unlock()
	r.metrics.OwnedPartitions(len(a.Owned))
	if changed {
		r.drainAll() // new partitions may hold a backlog
	}
}

func (r *Relay) work(ctx context.Context, i int) {
	poll := time.NewTimer(0) // claim once at start: rows may be waiting already
	defer poll.Stop()
	for {
		sweep := false
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
			sweep = true
		case <-r.drain[i]:
		case <-poll.C:
		}
		// One claim over all the partitions in reach finds what a wake-up or
		// a poll is about. A full batch means a backlog: then every worker
		// (after a sweep) drains its own partitions, one at a time.
		partitions, parts := r.share(i)
		if sweep {
			partitions, parts = r.Owned()
		}
		full := false
		if len(parts) > 0 {
			n, err := r.step(ctx, partitions, parts)
			if err != nil {
				r.log.WarnContext(ctx, "outbox relay: claim failed; retrying at next poll", "err", err)
			}
			full = err == nil && n >= r.cfg.BatchSize
		}
		if full {
			if sweep {
				r.drainAll()
			}
			if err := r.drainShare(ctx, i); err != nil {
				r.log.WarnContext(ctx, "outbox relay: claim failed; retrying at next poll", "err", err)
			}
		}
		poll.Reset(r.cfg.PollInterval)
	}
}

// drainShare claims from worker i's partitions, one partition at a time,
// while batches come back full: a backlog is worked at once, not one batch
// per poll, and each claim reads one partition's part of the index only.
func (r *Relay) drainShare(ctx context.Context, i int) error {
	partitions, parts := r.share(i)
	for _, p := range parts {
		for ctx.Err() == nil {
			n, err := r.step(ctx, partitions, []int{p})
			if err != nil {
				return err
			}
			if n < r.cfg.BatchSize {
				break
			}
		}
	}
	return nil
}

// Step claims one batch from the partitions this relay holds (taking its
// leases first when it holds none), publishes it and records the outcome. It
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

// passAfter is how long a publish may run before its worker's turn passes on
// (see Relay, Turns): no broker answers a batch faster across a network.
const passAfter = time.Millisecond

func (r *Relay) step(ctx context.Context, partitions int, parts []int) (int, error) {
	// The claim transaction and the publish must not be torn by shutdown halfway:
	// an acknowledged message whose mark is rolled back would be published again.
	// So the batch runs on a context that outlives ctx by at most PublishTimeout;
	// ctx only stops the next claim, and the wait for a turn to make it.
	if !r.turns.enter(ctx) {
		return 0, nil
	}
	var passed atomic.Bool
	pass := func() {
		if passed.CompareAndSwap(false, true) {
			r.turns.leave()
		}
	}
	defer pass()
	began := time.Now()
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.PublishTimeout)
	defer cancel()
	c := Claim{Limit: r.cfg.BatchSize, Partitions: partitions, Owned: parts, Ordered: r.cfg.Ordered}
	n, err := r.store.ClaimBatch(bctx, c, func(msgs []Message) (Outcome, error) {
		// A publish still running after this waits on the network, not
		// the database: another worker may claim meanwhile.
		t := time.AfterFunc(min(time.Since(began), passAfter), pass)
		defer t.Stop()
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
