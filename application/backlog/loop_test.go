package backlog_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/backlog"
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
	l := backlog.NewLoop(2, 10, 50*time.Millisecond, step, func(context.Context, error) { failures.Add(1) })
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
