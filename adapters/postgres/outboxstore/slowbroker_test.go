package outboxstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// lateBroker acknowledges a call of at most fits messages whole; of a
// larger one, the first fits at once and the rest only after the call's
// deadline, too late: they get the context's error, as PublishBatch calls
// cut off by their deadline do while the calls before them were answered.
type lateBroker struct {
	fits int

	mu    sync.Mutex
	acked map[uuid.UUID]int
}

func (b *lateBroker) Publish(ctx context.Context, msgs []outbox.Message) []error {
	done := min(b.fits, len(msgs))
	b.mu.Lock()
	for _, m := range msgs[:done] {
		b.acked[m.ID]++
	}
	b.mu.Unlock()
	errs := make([]error, len(msgs))
	if done == len(msgs) {
		return errs
	}
	<-ctx.Done()
	for i := done; i < len(msgs); i++ {
		errs[i] = ctx.Err()
	}
	return errs
}

func (b *lateBroker) ackCount(id uuid.UUID) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.acked[id]
}

// TestSlowBrokerCommitsWhatItAcknowledged: against Postgres, a publish that
// runs out of its deadline leaves the claim the time to commit what the
// broker acknowledged: those rows PUBLISHED, the others PENDING with one
// more attempt, nothing rolled back. And a relay whose every full batch
// runs late drains the table all the same, on smaller batches. A claim
// rolled back on the deadline, as it once was, marked nothing, ever.
func TestSlowBrokerCommitsWhatItAcknowledged(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	ids := insertRows(t, pool, 60, "payment.created")
	b := &lateBroker{fits: 5, acked: map[uuid.UUID]int{}}
	cfg := outbox.Config{BatchSize: 20, MaxAttempts: 100, Workers: 2, PollInterval: 10 * time.Millisecond,
		BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond, PublishTimeout: time.Second}
	r := outbox.NewRelay(outboxstore.New(pool), b, logtest.Discard(), nil, time.Now, cfg)

	// One claim of 20: 5 acknowledged in time, 15 not.
	var err error
	for range 3 { // a machine too busy to commit in what is left of the deadline rolls back; try again
		if _, err = r.Step(context.Background()); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("no claim committed: %v", err)
	}
	var published, retried int
	for _, id := range ids {
		switch s := state(t, pool, id); {
		case b.ackCount(id) > 0 && s.Status != "PUBLISHED":
			t.Errorf("row %s acknowledged but %s", id, s.Status)
		case s.Status == "PUBLISHED":
			published++
		case s.Attempts == 1:
			retried++
			if s.LastError == nil || *s.LastError != context.DeadlineExceeded.Error() {
				t.Errorf("row %s retried with last_error %v, want the deadline's", id, s.LastError)
			}
		}
	}
	if published != 5 || retried != 15 {
		t.Errorf("after one late claim of 20: %d PUBLISHED, %d retried; want 5 and 15", published, retried)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	waitFor(t, time.Minute, "every row PUBLISHED", func() bool { return countStatus(t, pool, "PUBLISHED") == len(ids) })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if b.ackCount(id) == 0 {
			t.Errorf("row %s PUBLISHED without an acknowledgement", id)
		}
	}
}
