package partition

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/turns"
)

// The defaults of the Config fields a deployment sets (cmd/payments passes
// them as its variables' defaults): each stated here once.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultActiveClaims  = 2
)

// Config tunes an Ordered. Zero fields take the defaults named on each.
type Config struct {
	// Owner names this replica in the leases. Two replicas must never share
	// one. Default: the host name (a container's is its id, a pod's its
	// name), so that `payments outbox partitions` says which replica holds
	// what, and a random suffix, so that two relays on one host never share
	// leases.
	Owner string
	// LeaseDuration is how long a lease lasts without renewal: the longest a
	// crashed replica's partitions wait before another replica takes them.
	// DefaultLeaseDuration.
	LeaseDuration time.Duration
	// Heartbeat is how often leases are renewed and rebalanced; default a
	// third of LeaseDuration, so two heartbeats may fail before a lease
	// expires.
	Heartbeat time.Duration
	// ActiveClaims is how many claim transactions the replicas together
	// keep at work in the database at once: each of n replicas, counted by
	// the heartbeat, has ActiveClaims/n turns, at least one
	// (application/outbox/turns). DefaultActiveClaims.
	ActiveClaims int
}

func (c Config) withDefaults() Config {
	if c.Owner == "" {
		c.Owner = hostOwner()
	}
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.Heartbeat <= 0 || c.Heartbeat > c.LeaseDuration/2 {
		c.Heartbeat = c.LeaseDuration / 3
	}
	if c.ActiveClaims <= 0 {
		c.ActiveClaims = DefaultActiveClaims
	}
	return c
}

// hostOwner is the default Config.Owner: the host name and a random suffix.
func hostOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "relay"
	}
	return host + "-" + uuid.NewString()[:8]
}

// Ordered is the outbox.Store of ordered mode: each claim reads, in write
// order, partitions this replica holds leases on and no other claim of the
// replica is reading, on a turn at the database. Run keeps its leases.
//
// Which partitions a claim reads: a partition whose last claim came back
// full, alone — a backlog drains one partition to a claim, and a claim of
// one partition reads only that partition's part of the index — or else
// every partition no other claim is reading, so that a wake-up (a NOTIFY
// says that something committed, not where) is one claim. When every
// partition is being read, a claim waits for one to come free instead of
// claiming nothing: a wake-up that came meanwhile is not lost.
type Ordered struct {
	store   Store
	turns   *turns.Limiter
	log     *slog.Logger
	metrics Metrics
	cfg     Config
	// rebalance asks the heartbeat loop for a heartbeat now.
	rebalance chan struct{}

	mu  sync.Mutex
	asg Assignment
	// validUntil is when the leases of asg expire if no heartbeat renews
	// them, by this process's monotonic clock, counted from before the
	// heartbeat was sent: the database's expiry is never earlier.
	validUntil time.Time
	beaten     bool          // a heartbeat has answered
	reading    map[int]bool  // partitions of the claims in flight
	backlog    map[int]bool  // partitions whose last claim came back full
	freed      chan struct{} // closed, and replaced, when partitions may have come free
	stopping   bool          // Run is stopping: no more claims
	inFlight   sync.WaitGroup
}

var _ outbox.Store = (*Ordered)(nil)

// NewOrdered returns the ordered outbox.Store on store. metrics may be nil.
func NewOrdered(store Store, log *slog.Logger, metrics Metrics, cfg Config) *Ordered {
	cfg = cfg.withDefaults()
	if metrics == nil {
		metrics = noMetrics{}
	}
	return &Ordered{store: store, turns: turns.NewLimiter(cfg.ActiveClaims), log: log, metrics: metrics, cfg: cfg,
		rebalance: make(chan struct{}, 1), reading: map[int]bool{}, backlog: map[int]bool{}, freed: make(chan struct{})}
}

// Owner is the name this replica holds its leases under.
func (o *Ordered) Owner() string { return o.cfg.Owner }

// Claim implements outbox.Store: a claim in write order of the partitions
// checkout picks, on a turn. A partition drained short of a full batch
// leaves the call free to go on with the next one the backlog left, in the
// same call, until it has claimed a batch's worth: so a backlog spread thin
// over many partitions drains at the pace of full batches, and the relay's
// loop, which claims again while batches come back full, keeps at it.
// Before the first heartbeat has answered it makes one itself.
func (o *Ordered) Claim(ctx context.Context, limit int, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	if !o.enter() {
		return 0, nil
	}
	defer o.inFlight.Done()
	if !o.hasBeaten() {
		if err := o.Heartbeat(ctx); err != nil {
			return 0, err
		}
	}
	total, backlogOnly := 0, false
	for {
		partitions, parts, drain, ok := o.checkout(ctx, backlogOnly)
		if !ok {
			return total, nil
		}
		n, last, err := o.claim(ctx, Claim{Limit: limit, Partitions: partitions, Owned: parts, Owner: o.cfg.Owner}, publish)
		o.checkin(parts, err == nil, n >= limit, last)
		total += n
		if err != nil || !drain || n >= limit || total >= limit {
			return total, err
		}
		backlogOnly = true
	}
}

// claim is one claim of c on a turn, which passes while the batch is at the
// broker. last is the highest partition of the rows it published, -1 when
// it published none: a claim of several reads them in partition order, so
// the partitions below last gave it every row they had.
func (o *Ordered) claim(ctx context.Context, c Claim, publish func(context.Context, []outbox.Message) outbox.Result) (n, last int, err error) {
	last = -1
	turn, ok := o.turns.Take(ctx)
	if !ok {
		return 0, last, ctx.Err()
	}
	defer turn.Pass()
	n, err = o.store.ClaimInOrder(ctx, c, func(ctx context.Context, msgs []outbox.Message) outbox.Result {
		defer turn.PassWhilePublishing()()
		for _, m := range msgs {
			last = max(last, Of(m.AggregateID, c.Partitions))
		}
		return publish(ctx, msgs)
	})
	return n, last, err
}

// enter counts a claim in flight; false once Run is stopping.
func (o *Ordered) enter() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopping {
		return false
	}
	o.inFlight.Add(1)
	return true
}

func (o *Ordered) hasBeaten() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.beaten
}

// checkout picks the partitions the next claim reads (see Ordered) and
// marks them read: a free partition of the backlog, alone (drain), or else
// every free partition. With backlogOnly it takes only the former, and does
// not wait. It returns false if this replica holds no partition, or ctx
// ended while every one was being read.
func (o *Ordered) checkout(ctx context.Context, backlogOnly bool) (partitions int, parts []int, drain, ok bool) {
	for {
		o.mu.Lock()
		partitions, owned := o.ownedLocked()
		var free []int
		for _, p := range owned {
			if !o.reading[p] {
				free = append(free, p)
			}
		}
		for _, p := range free {
			if o.backlog[p] {
				parts, drain = []int{p}, true
				break
			}
		}
		if parts == nil && !backlogOnly {
			parts = free
		}
		if len(parts) > 0 {
			for _, p := range parts {
				o.reading[p] = true
			}
			o.mu.Unlock()
			return partitions, parts, drain, true
		}
		freed := o.freed
		o.mu.Unlock()
		if len(owned) == 0 || backlogOnly {
			return 0, nil, false, false
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return 0, nil, false, false
		}
	}
}

// checkin lets the partitions of a claim go and, when it committed, notes
// which may still hold a backlog: after a full batch, the partition of a
// claim of one; of a claim of several, those from the last it published
// from on (all of them if it published none). After a short batch, none.
func (o *Ordered) checkin(parts []int, committed, full bool, last int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range parts {
		delete(o.reading, p)
		switch {
		case !committed:
		case full && p >= last:
			o.backlog[p] = true
		default:
			delete(o.backlog, p)
		}
	}
	o.signal()
}

// signal wakes every checkout waiting; o.mu is held.
func (o *Ordered) signal() {
	close(o.freed)
	o.freed = make(chan struct{})
}

// Owned returns the partition count and the partitions this replica holds
// leases on; no partitions once the leases may have expired unrenewed.
func (o *Ordered) Owned() (partitions int, owned []int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ownedLocked()
}

func (o *Ordered) ownedLocked() (partitions int, owned []int) {
	if time.Now().After(o.validUntil) {
		return o.asg.Partitions, nil
	}
	return o.asg.Partitions, o.asg.Owned
}

// Run keeps this replica's leases until ctx ends: a heartbeat every
// Config.Heartbeat, and at once on Rebalance. Then it lets the claims in
// flight finish under renewed leases, takes no more until Run is called
// again, and releases the leases, so that the other replicas take its
// partitions at their next heartbeat instead of a lease duration later. It
// returns nil.
func (o *Ordered) Run(ctx context.Context) error {
	o.mu.Lock()
	o.stopping = false
	o.mu.Unlock()
	hctx, stopHeartbeat := context.WithCancel(context.WithoutCancel(ctx))
	var heartbeat sync.WaitGroup
	heartbeat.Go(func() { o.keepLeases(hctx) })
	<-ctx.Done()
	o.mu.Lock()
	o.stopping = true
	o.mu.Unlock()
	o.inFlight.Wait()
	stopHeartbeat()
	heartbeat.Wait()
	o.releaseLeases(ctx)
	return nil
}

// Rebalance asks for a lease heartbeat now instead of at the next interval:
// another replica released partitions or lacks its share (a NOTIFY with the
// store's rebalance payload says so). It never blocks; heartbeats it causes
// are at least a tenth of Config.Heartbeat apart.
func (o *Ordered) Rebalance() {
	select {
	case o.rebalance <- struct{}{}:
	default:
	}
}

// Heartbeat renews and rebalances this replica's leases once
// (Store.Heartbeat), hands its claims the partitions it now holds and its
// turns its share of the replicas alive. Run calls it every
// Config.Heartbeat; it is exported for tests and benchmarks that drive the
// relay by Step.
func (o *Ordered) Heartbeat(ctx context.Context) error {
	sent := time.Now()
	a, err := o.store.Heartbeat(ctx, o.cfg.Owner, o.cfg.LeaseDuration)
	if err != nil {
		return fmt.Errorf("lease heartbeat: %w", err)
	}
	if a.Took+a.Released > 0 {
		o.metrics.Rebalanced()
		o.log.InfoContext(ctx, "outbox relay: partitions rebalanced",
			"owner", o.cfg.Owner, "owned", len(a.Owned), "took", a.Took, "released", a.Released, "partitions", a.Partitions)
	}
	o.setAssignment(a, sent.Add(o.cfg.LeaseDuration))
	o.turns.Share(a.Replicas)
	return nil
}

func (o *Ordered) setAssignment(a Assignment, validUntil time.Time) {
	o.mu.Lock()
	o.asg, o.validUntil, o.beaten = a, validUntil, true
	o.signal() // new partitions may be free to read
	o.mu.Unlock()
	o.metrics.OwnedPartitions(len(a.Owned))
}

// keepLeases heartbeats every Config.Heartbeat, and at once on Rebalance,
// until ctx ends.
func (o *Ordered) keepLeases(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-o.rebalance:
			if wait := o.cfg.Heartbeat/10 - time.Since(last); wait > 0 {
				// Too soon after the last one: beat once the gap is kept
				// (Reset drops any tick pending on t.C).
				t.Reset(wait)
				continue
			}
		}
		last = time.Now()
		if err := o.Heartbeat(ctx); err != nil && ctx.Err() == nil {
			o.log.WarnContext(ctx, "outbox relay: lease heartbeat failed; retrying", "err", err)
		}
		t.Reset(o.cfg.Heartbeat)
	}
}

// releaseLeases gives up this replica's leases, so that the other replicas
// take its partitions at their next heartbeat instead of once the leases
// expire.
func (o *Ordered) releaseLeases(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := o.store.Release(rctx, o.cfg.Owner); err != nil {
		o.log.WarnContext(rctx, "outbox relay: releasing leases failed; other replicas take the partitions when the leases expire",
			"owner", o.cfg.Owner, "err", err, "lease_duration", o.cfg.LeaseDuration)
	}
	o.setAssignment(Assignment{}, time.Time{})
}
