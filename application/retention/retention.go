// Package retention deletes rows a store no longer needs — PUBLISHED outbox
// rows, inbox rows past the broker's redelivery window, unhandled inbox rows
// past their own window, expired idempotency keys — in bounded batches, on a
// timer, for as long as the service runs. A DeleteFunc whose deletions are
// news (an unhandled row deleted is a message no version applied) logs and
// counts each batch itself, around the store's statement
// (inbox.Processor.ExpireUnhandled).
//
// Every store offers the same shape, one DeleteFunc: a single short DELETE of
// at most limit rows older than a cutoff. A large backlog is then many small
// transactions instead of one long-locking statement that bloats on a big
// table, and this package's loop is the only one: a forker adding a table
// with a retention writes one DeleteFunc and one Job. The package does no I/O
// of its own.
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// DeleteFunc deletes at most limit rows older than cutoff, in one statement,
// and returns how many it deleted. Fewer than limit means none older is left.
type DeleteFunc func(ctx context.Context, cutoff time.Time, limit int) (int, error)

// Sweep deletes every row older than cutoff, limit rows per call of del, and
// returns how many it deleted. It stops at del's first error, and between
// batches as soon as ctx ends (returning ctx's error).
func Sweep(ctx context.Context, del DeleteFunc, cutoff time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, fmt.Errorf("retention batch of %d rows: want at least 1", limit)
	}
	total := 0
	for ctx.Err() == nil {
		n, err := del(ctx, cutoff, limit)
		total += n
		if err != nil {
			return total, err
		}
		if n < limit {
			return total, nil
		}
	}
	return total, ctx.Err()
}

// Job is one kind of row to expire.
type Job struct {
	Name      string        // what is deleted, as the logs name it: "outbox", "inbox", …
	Delete    DeleteFunc    // one bounded batch
	Retention time.Duration // rows older than this go
	// Every is the pause between sweeps, varied at random by up to a tenth
	// either way so replicas started together (a deploy) do not keep
	// sweeping the same rows at the same moment.
	Every time.Duration
	Batch int // rows per statement
}

// Run sweeps job's rows at once and then every job.Every until ctx ends, and
// returns nil then. A sweep that deleted rows logs how many; a failed one
// logs why and is retried at the next tick: expiring rows is never urgent,
// and a database outage must not stop the service.
func Run(ctx context.Context, job Job, now func() time.Time, log *slog.Logger) error {
	if job.Every <= 0 {
		return errors.New("retention " + job.Name + ": Every must be positive")
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		n, err := Sweep(ctx, job.Delete, now().Add(-job.Retention), job.Batch)
		switch {
		case err != nil && ctx.Err() == nil:
			log.WarnContext(ctx, "retention sweep failed; will retry at the next tick",
				"job", job.Name, "deleted", n, "err", err)
		case n > 0:
			log.InfoContext(ctx, "retention sweep deleted expired rows", "job", job.Name, "deleted", n)
		}
		t.Reset(jitter(job.Every, rand.Float64()))
	}
}

// jitter scales every by a factor in [0.9, 1.1) chosen by rnd in [0, 1).
func jitter(every time.Duration, rnd float64) time.Duration {
	return every - every/10 + time.Duration(float64(every/5)*rnd)
}
