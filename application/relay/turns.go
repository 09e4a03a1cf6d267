package relay

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Turns: a worker opens its claim transaction only on a turn. The replicas
// share Config.ActiveClaims turns: each of n replicas, counted by the lease
// heartbeat, has ActiveClaims/n of them, at least one. The worker keeps its
// turn until it commits, or until its publish is waiting on the network,
// whichever comes first. Against a fast broker, then, a replica has as many
// transactions at work in the database as it has turns; against a slow one
// the turn passes on as soon as the batch is at the broker, and all the
// workers publish at once.
//
// The database's cost grows with the claim transactions at work on it at
// once, not only with the rows they move: turns bound those, however many
// replicas and workers there are. Turns also keep a relay draining a backlog after an outage from
// taking the cores the API needs. No deadlock: a worker waits for a turn
// only before it claims, never with rows locked.

// passAfter is how long a publish may run before its worker's turn passes
// on: no broker answers a batch faster across a network.
const passAfter = time.Millisecond

// turns hands out a replica's turns at the database.
type turns struct {
	fleet int // Config.ActiveClaims

	mu     sync.Mutex
	active int           // turns taken
	limit  int           // turns this replica may take at once
	freed  chan struct{} // closed, and replaced, when a turn may have come free
}

func newTurns(fleet int) *turns {
	t := &turns{fleet: fleet, freed: make(chan struct{})}
	t.share(1)
	return t
}

// share sets the replica's turns for replicas alive, itself among them:
// ActiveClaims/replicas, at least one.
func (t *turns) share(replicas int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limit = max(1, t.fleet/max(replicas, 1))
	t.signal()
}

// enter waits for a turn; false if ctx ended first.
func (t *turns) enter(ctx context.Context) bool {
	for {
		t.mu.Lock()
		if t.active < t.limit {
			t.active++
			t.mu.Unlock()
			return true
		}
		freed := t.freed
		t.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		}
	}
}

// leave gives a turn back.
func (t *turns) leave() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.active--
	t.signal()
}

// signal wakes every enter waiting; t.mu is held.
func (t *turns) signal() {
	close(t.freed)
	t.freed = make(chan struct{})
}

// turn is one turn taken: passed once, by whichever comes first.
type turn struct {
	t      *turns
	taken  time.Time
	passed atomic.Bool
}

// take waits for a turn; false if ctx ended first.
func (t *turns) take(ctx context.Context) (*turn, bool) {
	if !t.enter(ctx) {
		return nil, false
	}
	return &turn{t: t, taken: time.Now()}, true
}

// pass gives the turn back; calls after the first do nothing.
func (u *turn) pass() {
	if u.passed.CompareAndSwap(false, true) {
		u.t.leave()
	}
}

// passWhilePublishing passes the turn if the publish that follows is still
// running after passAfter, or after as long as the claim took if that was
// shorter: then the batch waits on the broker, not the database, and
// another worker may claim meanwhile. Call the returned stop when the
// publish returns.
func (u *turn) passWhilePublishing() (stop func()) {
	timer := time.AfterFunc(min(time.Since(u.taken), passAfter), u.pass)
	return func() { timer.Stop() }
}
