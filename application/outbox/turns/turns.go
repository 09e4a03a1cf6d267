// Package turns bounds how many claim transactions of the outbox relay are
// at work in the database at once. A relay's workers each hold a claim
// transaction open while their batch is at the broker, which is what keeps a
// slow broker busy; against a fast one the database is the limit, and there
// the claims get in each other's way: every claim starts at the head of the
// pending rows and steps over the rows the others hold locked, so each row
// costs the database more the more claims run beside it.
//
// A worker therefore opens its claim transaction only on a turn, and keeps
// the turn until it commits, or until its publish is waiting on the network,
// whichever comes first. Against a fast broker a replica has as many claims
// at work in the database as it has turns; against a slow one the turn
// passes on as soon as a batch is at the broker, and every worker publishes
// at once. No deadlock: a worker waits for a turn only before it claims,
// never with rows locked.
//
// Limiter.Store puts the turns around any outbox.Store, which knows nothing
// of them; the partitioned relay of ordered mode takes them itself and
// shares a number of turns between the replicas alive (Share).
package turns

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/payments-outbox/payments-outbox/application/outbox"
)

// passAfter is how long a publish may run before its worker's turn passes
// on: no broker answers a batch faster across a network.
const passAfter = time.Millisecond

// Limiter hands out turns at the database.
type Limiter struct {
	turns int // shared by the replicas, at least one each

	mu     sync.Mutex
	active int           // turns taken
	limit  int           // turns this replica may take at once
	freed  chan struct{} // closed, and replaced, when a turn may have come free
}

// NewLimiter returns a Limiter of n turns (at least one).
func NewLimiter(n int) *Limiter {
	l := &Limiter{turns: max(n, 1), freed: make(chan struct{})}
	l.Share(1)
	return l
}

// Share sets this replica's part of the turns for replicas alive, itself
// among them: turns/replicas, at least one.
func (l *Limiter) Share(replicas int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit = max(1, l.turns/max(replicas, 1))
	l.signal()
}

// Take waits for a turn; false if ctx ended first.
func (l *Limiter) Take(ctx context.Context) (*Turn, bool) {
	for {
		l.mu.Lock()
		if l.active < l.limit {
			l.active++
			l.mu.Unlock()
			return &Turn{l: l, taken: time.Now()}, true
		}
		freed := l.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// signal wakes every Take waiting; l.mu is held.
func (l *Limiter) signal() {
	close(l.freed)
	l.freed = make(chan struct{})
}

// Turn is one turn taken: passed once, by whichever comes first.
type Turn struct {
	l      *Limiter
	taken  time.Time
	passed atomic.Bool
}

// Pass gives the turn back; calls after the first do nothing.
func (u *Turn) Pass() {
	if u.passed.CompareAndSwap(false, true) {
		u.l.mu.Lock()
		defer u.l.mu.Unlock()
		u.l.active--
		u.l.signal()
	}
}

// PassWhilePublishing passes the turn if the publish that follows is still
// running after passAfter, or after as long as the claim took if that was
// shorter: then the batch waits on the broker, not the database, and
// another worker may claim meanwhile. Call the returned stop when the
// publish returns.
func (u *Turn) PassWhilePublishing() (stop func()) {
	timer := time.AfterFunc(min(time.Since(u.taken), passAfter), u.Pass)
	return func() { timer.Stop() }
}

// Store returns inner with every claim taken on a turn.
func (l *Limiter) Store(inner outbox.Store) outbox.Store { return store{inner: inner, l: l} }

type store struct {
	inner outbox.Store
	l     *Limiter
}

// Claim waits for a turn (claiming nothing if ctx ends first), claims on it,
// and passes it at the commit or while the batch waits on the broker.
func (s store) Claim(ctx context.Context, limit int, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	turn, ok := s.l.Take(ctx)
	if !ok {
		return 0, nil
	}
	defer turn.Pass()
	return s.inner.Claim(ctx, limit, func(ctx context.Context, msgs []outbox.Message) outbox.Result {
		defer turn.PassWhilePublishing()()
		return publish(ctx, msgs)
	})
}
