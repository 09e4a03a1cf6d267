package relay

import (
	"context"
	"sync"
)

// turnstile hands out a replica's turns at the database: its share of the
// replicas' Config.ActiveClaims (see Relay, Turns).
type turnstile struct {
	fleet int // Config.ActiveClaims

	mu     sync.Mutex
	active int           // turns taken
	limit  int           // turns this replica may take at once
	freed  chan struct{} // closed, and replaced, when a turn may have come free
}

func newTurnstile(fleet int) *turnstile {
	t := &turnstile{fleet: fleet, freed: make(chan struct{})}
	t.share(1)
	return t
}

// share sets the replica's turns for replicas alive, itself among them:
// ActiveClaims/replicas, at least one.
func (t *turnstile) share(replicas int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limit = max(1, t.fleet/max(replicas, 1))
	t.signal()
}

// enter waits for a turn; false if ctx ended first.
func (t *turnstile) enter(ctx context.Context) bool {
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
func (t *turnstile) leave() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.active--
	t.signal()
}

// signal wakes every enter waiting; t.mu is held.
func (t *turnstile) signal() {
	close(t.freed)
	t.freed = make(chan struct{})
}
