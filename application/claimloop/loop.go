// Package claimloop is what the two tables of this repository that are
// worked by claiming share: the outbox, whose rows the relay
// (application/outbox) publishes, and the inbox, whose rows the processor
// (application/inbox) applies. Both lock the rows of a batch in one
// transaction, work them, write each row's result and commit; both
// reschedule a failed row with exponential backoff and jitter until a
// maximum of attempts sets it aside (DEAD in the outbox, parked in the
// inbox). The SQL of each claim stays in its store, and what a batch does
// in its use case: those differ. What is the same is here: the retry
// schedule (Backoff, Schedule), how often to count a table's backlog for
// its gauges (StatsWait, CountEvery), and the loop that claims on wake-ups
// and polls and drains while batches come back full (Loop), which the inbox
// processor and the webhooks' delivery workers run; the relay's loop is
// written out in its own file, beside the claim it runs.
package claimloop

import (
	"context"
	"sync"
	"time"
)

// Step claims one batch, works it and commits, and returns how many rows it
// claimed: as many as the batch size means more are waiting.
type Step func(context.Context) (int, error)

// Shares tells the loop which claims a worker may make now. The loop asks
// each time a worker wakes, so a share that changes (the relay's leases
// move) is followed at the next claim. A nil Step means that there is
// nothing to claim from.
type Shares interface {
	// Sweep is the claim over everything the loop may claim, made by the
	// worker that Wake woke: a wake-up says that a row was committed, not
	// where.
	Sweep() Step
	// Own is worker w's claim over its share, made when its poll is due or
	// WakeAll woke it.
	Own(w int) Step
	// Drain is the claims that work off a backlog in worker w's share, one
	// after the other, each made again while its batches come back full.
	Drain(w int) []Step
}

// Whole is the Shares of a table that every worker claims from alike (the
// inbox): every claim is step.
func Whole(step Step) Shares { return whole{step} }

type whole struct{ step Step }

func (s whole) Sweep() Step      { return s.step }
func (s whole) Own(int) Step     { return s.step }
func (s whole) Drain(int) []Step { return []Step{s.step} }

// Config tunes a Loop. Zero fields take the defaults named on each.
type Config struct {
	Workers      int           // goroutines claiming at once; default 1
	BatchSize    int           // rows a full batch has; default 1
	PollInterval time.Duration // claim at least this often when nothing wakes a worker; default 1s
}

func (c Config) withDefaults() Config {
	c.Workers = max(c.Workers, 1)
	c.BatchSize = max(c.BatchSize, 1)
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	return c
}

// Loop runs the workers that claim from one table. Each claims once at
// start, then whenever it is woken or its poll is due; when a batch comes
// back full it drains its share (Shares.Drain) instead of waiting for the
// next poll, and when a sweep comes back full it sets every worker
// draining its own share. A failed claim (an outage) is handed to onError
// and tried again at the worker's next poll: it delays the work, never
// stops the loop.
type Loop struct {
	cfg     Config
	shares  Shares
	onError func(context.Context, error)
	// wake holds one pending wake-up per worker; sends never block, so a
	// burst of wake-ups collapses into at most Workers sweeps.
	wake chan struct{}
	// own[w] holds worker w's pending call to claim its own share.
	own []chan struct{}
}

// New returns a Loop that claims what shares names; onError receives each
// failed claim.
func New(shares Shares, onError func(context.Context, error), cfg Config) *Loop {
	cfg = cfg.withDefaults()
	l := &Loop{cfg: cfg, shares: shares, onError: onError,
		wake: make(chan struct{}, cfg.Workers), own: make([]chan struct{}, cfg.Workers)}
	for w := range l.own {
		l.own[w] = make(chan struct{}, 1)
	}
	return l
}

// Wake asks an idle worker to sweep now instead of at its next poll. It
// never blocks and is safe from any goroutine.
func (l *Loop) Wake() {
	select {
	case l.wake <- struct{}{}:
	default: // enough wake-ups already pending
	}
}

// WakeAll asks every worker to claim its own share now: a backlog, or new
// shares. It never blocks and is safe from any goroutine.
func (l *Loop) WakeAll() {
	for _, c := range l.own {
		select {
		case c <- struct{}{}:
		default: // already asked
		}
	}
}

// Run runs the workers until ctx ends, waits for each to finish its batch in
// hand, and returns nil.
func (l *Loop) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for w := range l.cfg.Workers {
		wg.Go(func() { l.work(ctx, w) })
	}
	wg.Wait()
	return nil
}

func (l *Loop) work(ctx context.Context, w int) {
	poll := time.NewTimer(0) // claim once at start: rows may be waiting already
	defer poll.Stop()
	for {
		swept := false
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
			swept = true
		case <-l.own[w]:
		case <-poll.C:
		}
		l.claim(ctx, w, swept)
		poll.Reset(l.cfg.PollInterval)
	}
}

// claim makes worker w's first claim, and drains its share while batches
// come back full.
func (l *Loop) claim(ctx context.Context, w int, sweep bool) {
	first := l.shares.Own(w)
	if sweep {
		first = l.shares.Sweep()
	}
	if first == nil {
		return
	}
	if full, err := l.full(ctx, first); err != nil || !full {
		return
	}
	if sweep {
		l.WakeAll() // a backlog: every worker drains its own share
	}
	for _, step := range l.shares.Drain(w) {
		for ctx.Err() == nil {
			full, err := l.full(ctx, step)
			if err != nil {
				return
			}
			if !full {
				break
			}
		}
	}
}

// full runs step and reports whether its batch was full; its error goes to
// onError.
func (l *Loop) full(ctx context.Context, step Step) (bool, error) {
	n, err := step(ctx)
	if err != nil {
		l.onError(ctx, err)
		return false, err
	}
	return n >= l.cfg.BatchSize, nil
}
