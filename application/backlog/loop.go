package backlog

import (
	"context"
	"sync"
	"time"
)

// Loop runs the claim loop both backlogs share: Workers goroutines, each
// claiming once at start, then whenever it is woken or PollInterval has
// passed, and draining while batches come back full (a backlog is worked at
// once, not one batch per poll; a full batch also wakes another worker to
// help). Step claims and settles one batch; its error is handed to OnError
// and the worker waits for its next poll: an outage delays work, never stops
// the loop.
type Loop struct {
	workers   int
	batchSize int
	poll      time.Duration
	step      func(context.Context) (int, error)
	onError   func(context.Context, error)
	// wake holds one pending wake-up per worker; sends never block, so a
	// burst of wake-ups collapses into at most Workers claims.
	wake chan struct{}
}

// NewLoop returns a Loop of workers goroutines running step; a batch of
// batchSize rows counts as full.
func NewLoop(workers, batchSize int, poll time.Duration, step func(context.Context) (int, error), onError func(context.Context, error)) *Loop {
	return &Loop{workers: workers, batchSize: batchSize, poll: poll, step: step, onError: onError, wake: make(chan struct{}, workers)}
}

// Wake asks an idle worker to claim now instead of at its next poll. It never
// blocks and is safe from any goroutine.
func (l *Loop) Wake() {
	select {
	case l.wake <- struct{}{}:
	default: // enough wake-ups already pending
	}
}

// Run runs the workers until ctx ends, waits for each to finish its batch in
// hand, and returns nil.
func (l *Loop) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range l.workers {
		wg.Go(func() { l.work(ctx) })
	}
	wg.Wait()
	return nil
}

func (l *Loop) work(ctx context.Context) {
	poll := time.NewTimer(0) // claim once at start: rows may be waiting already
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
		case <-poll.C:
		}
		for ctx.Err() == nil {
			n, err := l.step(ctx)
			if err != nil {
				l.onError(ctx, err)
				break
			}
			if n < l.batchSize {
				break
			}
			l.Wake()
		}
		poll.Reset(l.poll)
	}
}
