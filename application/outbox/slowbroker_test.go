package outbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/outboxtest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// slowBroker is a broker slower than the relay's deadline: it acknowledges
// at once the first answers messages of each call, and the rest only after
// the call's deadline, which is too late: they get the context's error, as
// an SNS call cut off by its deadline does. A call of at most fits messages
// it acknowledges whole. It counts every acknowledgement and records the
// size of every call.
type slowBroker struct {
	fits, answers int

	mu    sync.Mutex
	acked map[uuid.UUID]int
	calls []int
}

func (b *slowBroker) Publish(ctx context.Context, msgs []outbox.Message) []error {
	b.mu.Lock()
	b.calls = append(b.calls, len(msgs))
	if b.acked == nil {
		b.acked = map[uuid.UUID]int{}
	}
	done := len(msgs)
	if done > b.fits {
		done = min(b.answers, done)
	}
	for _, m := range msgs[:done] {
		b.acked[m.ID]++
	}
	b.mu.Unlock()
	errs := make([]error, len(msgs))
	if done == len(msgs) {
		return errs
	}
	<-ctx.Done() // the rest are still at the broker when the deadline comes
	for i := done; i < len(msgs); i++ {
		errs[i] = ctx.Err()
	}
	return errs
}

func (b *slowBroker) sizes() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.calls...)
}

func (b *slowBroker) ackCount(id uuid.UUID) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.acked[id]
}

// slowBrokerTimeout is the PublishTimeout of these tests: short, since
// every batch the slow broker cannot take waits it out.
const slowBrokerTimeout = 400 * time.Millisecond

// stepUntilCommitted steps r until a claim commits: a machine so busy that
// the write-back misses its deadline rolls the claim back, as it should, and
// the next Step claims the rows again. Today's relay rolls back every claim
// the broker did not answer in time.
func stepUntilCommitted(t *testing.T, r *outbox.Relay) int {
	t.Helper()
	var err error
	for range 5 {
		var n int
		if n, err = r.Step(context.Background()); err == nil {
			return n
		}
	}
	t.Fatalf("no claim committed in 5 steps: %v", err)
	return 0
}

// TestTimedOutPublishKeepsWhatTheBrokerAcknowledged: a publish that runs
// out of its deadline after the broker acknowledged part of the batch
// commits what it learnt: those rows PUBLISHED, never sent again, the rest
// retried with backoff. Rolling the whole claim back would send every row
// again at the next claim, and again, for as long as the broker stays slow.
func TestTimedOutPublishKeepsWhatTheBrokerAcknowledged(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := outboxtest.NewFakeStore(clk.now)
	ids := store.Add(10, "payment.created")
	b := &slowBroker{fits: 0, answers: 3}
	m := &recordingMetrics{}
	r := outbox.NewRelay(store, b, logtest.Discard(), m, clk.now, outbox.Config{BatchSize: 10, PublishTimeout: slowBrokerTimeout})

	if n := stepUntilCommitted(t, r); n != 10 {
		t.Fatalf("claimed %d, want 10", n)
	}
	for i, id := range ids {
		row := store.Row(id)
		switch acked := b.ackCount(id) > 0; {
		case acked && row.Status != "PUBLISHED":
			t.Errorf("row %d: acknowledged but %s", i, row.Status)
		case !acked && (row.Status != "PENDING" || row.Message.Attempts != 1 || !row.NextAttempt.After(clk.now())):
			t.Errorf("row %d: not acknowledged, got %s attempts=%d due %v; want PENDING, attempts=1, retried after a backoff",
				i, row.Status, row.Message.Attempts, row.NextAttempt)
		case !acked && row.LastError != context.DeadlineExceeded.Error():
			t.Errorf("row %d: last error %q, want the deadline's", i, row.LastError)
		}
	}
	if got := store.Count("PUBLISHED"); got != 3 {
		t.Errorf("got %d PUBLISHED, want the 3 the broker acknowledged", got)
	}
	// The operator sees the batch size: 10 at the start, 5 after the late batch.
	if got := m.sizes(); len(got) < 2 || got[0] != 10 || got[len(got)-1] != 5 {
		t.Errorf("batch size gauge: got %v, want 10 then 5", got)
	}
}

// TestSlowBrokerStillMakesProgress is the livelock a broker slower than the
// deadline caused: every full batch ran out of its deadline, the claim
// rolled back and the same batch was claimed and sent again, and no row
// ever became PUBLISHED. The broker here acknowledges nothing of a batch
// over 5 messages in time, and all of one of 5 or fewer: the relay must
// find that size and publish everything.
func TestSlowBrokerStillMakesProgress(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := outboxtest.NewFakeStore(clk.now)
	ids := store.Add(40, "payment.created")
	b := &slowBroker{fits: 5}
	r := newRelay(outbox.Config{BatchSize: 16, MaxAttempts: 100, PublishTimeout: slowBrokerTimeout}, store, b, clk)

	for step := 0; store.Count("PUBLISHED") < len(ids); step++ {
		if step == 40 {
			t.Fatalf("%d of %d rows PUBLISHED after %d steps (batches sent: %v); want all: the relay makes no progress",
				store.Count("PUBLISHED"), len(ids), step, b.sizes())
		}
		n, err := r.Step(context.Background())
		if err == nil && n == 0 {
			clk.advance(time.Hour) // what is left waits out its backoff
		}
	}
	for _, id := range ids {
		if got := b.ackCount(id); got != 1 {
			t.Errorf("row %s acknowledged %d times, want once", id, got)
		}
	}
	for _, n := range b.sizes() {
		if n > 16 {
			t.Errorf("a batch of %d, over Config.BatchSize 16", n)
		}
	}
}
