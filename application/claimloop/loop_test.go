package claimloop_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/claimloop"
)

// TestLoopDrainsABacklogAtOnce: full batches are claimed back to back, not
// one per poll; a failed step waits for the next poll; Run returns once ctx
// ends.
func TestLoopDrainsABacklogAtOnce(t *testing.T) {
	t.Parallel()
	var left atomic.Int64
	left.Store(25)
	var failures atomic.Int64
	failOnce := atomic.Bool{}
	failOnce.Store(true)
	step := func(context.Context) (int, error) {
		if failOnce.CompareAndSwap(true, false) {
			return 0, errors.New("outage")
		}
		n := min(left.Load(), 10)
		left.Add(-n)
		return int(n), nil
	}
	l := claimloop.New(claimloop.Whole(step), func(context.Context, error) { failures.Add(1) },
		claimloop.Config{Workers: 2, BatchSize: 10, PollInterval: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for left.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d rows left", left.Load())
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, with a deadline
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if failures.Load() != 1 {
		t.Errorf("failures reported: got %d, want 1", failures.Load())
	}
}

// sweepShares counts each worker's claims of its own share; the sweep finds
// a full batch once.
type sweepShares struct {
	batch int
	swept atomic.Bool
	mu    sync.Mutex
	own   map[int]int
}

func (s *sweepShares) Sweep() claimloop.Step {
	return func(context.Context) (int, error) {
		if s.swept.CompareAndSwap(false, true) {
			return s.batch, nil
		}
		return 0, nil
	}
}

func (s *sweepShares) Own(w int) claimloop.Step {
	return func(context.Context) (int, error) {
		s.mu.Lock()
		s.own[w]++
		s.mu.Unlock()
		return 0, nil
	}
}

func (s *sweepShares) Drain(w int) []claimloop.Step { return []claimloop.Step{s.Own(w)} }

func (s *sweepShares) ownClaims(w int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.own[w]
}

// TestFullSweepSetsEveryWorkerClaiming: a wake-up makes one worker sweep
// everything; when that batch is full, every worker claims its own share
// at once, not at its next poll.
func TestFullSweepSetsEveryWorkerClaiming(t *testing.T) {
	t.Parallel()
	const workers = 3
	s := &sweepShares{batch: 10, own: map[int]int{}}
	l := claimloop.New(s, func(context.Context, error) {}, claimloop.Config{Workers: workers, BatchSize: 10, PollInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond) // polling a condition, with a deadline
		}
	}
	for w := range workers {
		waitFor("the claims at start", func() bool { return s.ownClaims(w) == 1 })
	}
	l.Wake()
	for w := range workers {
		waitFor(fmt.Sprintf("worker %d claiming its share after the full sweep", w), func() bool { return s.ownClaims(w) >= 2 })
	}
	if !s.swept.Load() {
		t.Error("no sweep")
	}
}
