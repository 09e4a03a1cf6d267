package relay

import (
	"context"
	"testing"
)

// TestTurnsAreSharedByTheReplicas: each of n replicas has ActiveClaims/n
// turns, at least one, and enter waits while they are all taken.
func TestTurnsAreSharedByTheReplicas(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ fleet, replicas, want int }{
		{fleet: 2, replicas: 1, want: 2},
		{fleet: 2, replicas: 2, want: 1},
		{fleet: 2, replicas: 8, want: 1},
		{fleet: 8, replicas: 3, want: 2},
		{fleet: 2, replicas: 0, want: 2}, // before the first heartbeat: alone
	} {
		ts := newTurns(c.fleet)
		ts.share(c.replicas)
		got := 0
		for got <= c.want && ts.enter(ended) { // takes a free turn, never waits
			got++
		}
		if got != c.want {
			t.Errorf("ActiveClaims %d, %d replicas: got %d turns at once, want %d", c.fleet, c.replicas, got, c.want)
		}
	}
}

// ended is a context that has ended: enter with it takes a free turn or
// gives up at once.
var ended = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// TestALeftTurnLetsTheNextIn: a replica whose share grows, or whose turn
// is given back, lets a waiting worker in.
func TestALeftTurnLetsTheNextIn(t *testing.T) {
	t.Parallel()
	ts := newTurns(2)
	ts.share(2) // one turn
	ctx := context.Background()
	if !ts.enter(ctx) {
		t.Fatal("enter: no turn")
	}
	got := make(chan bool)
	go func() { got <- ts.enter(ctx) }()
	ts.share(1) // the other replica left: two turns
	if !<-got {
		t.Fatal("a second turn after the share grew: none")
	}
	go func() { got <- ts.enter(ctx) }()
	ts.leave()
	if !<-got {
		t.Fatal("a turn after one was left: none")
	}
}
