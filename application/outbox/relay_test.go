package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/outboxtest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// fakePublisher acknowledges every message except those in fail, and records
// what it acknowledged.
type fakePublisher struct {
	mu      sync.Mutex
	fail    map[uuid.UUID]error
	acked   map[uuid.UUID]int
	short   bool          // report one result fewer than messages
	entered chan struct{} // if set, signalled on each call
	release chan struct{} // if set, each call waits for it
}

func (p *fakePublisher) Publish(ctx context.Context, msgs []outbox.Message) []error {
	if p.entered != nil {
		p.entered <- struct{}{}
	}
	if p.release != nil {
		<-p.release
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.acked == nil {
		p.acked = map[uuid.UUID]int{}
	}
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		if err := p.fail[m.ID]; err != nil {
			errs[i] = err
			continue
		}
		p.acked[m.ID]++
	}
	if p.short {
		// The last message has no result, so it must not count as acknowledged.
		p.acked[msgs[len(msgs)-1].ID]--
		return errs[:len(errs)-1]
	}
	return errs
}

func (p *fakePublisher) ackCount(id uuid.UUID) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acked[id]
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newRelay(cfg outbox.Config, store *outboxtest.FakeStore, pub outbox.Publisher, clk *clock) *outbox.Relay {
	return outbox.NewRelay(store, pub, logtest.Discard(), nil, clk.now, cfg)
}

func TestStepPublishesAndMarks(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := outboxtest.NewFakeStore(clk.now)
	ids := store.Add(3, "payment.created")
	pub := &fakePublisher{}
	r := newRelay(outbox.Config{BatchSize: 10}, store, pub, clk)

	n, err := r.Step(context.Background())
	if err != nil || n != 3 {
		t.Fatalf("Step: got %d, %v; want 3, nil", n, err)
	}
	for _, id := range ids {
		if got := store.Row(id).Status; got != "PUBLISHED" {
			t.Errorf("row %s: got status %s, want PUBLISHED", id, got)
		}
		if got := pub.ackCount(id); got != 1 {
			t.Errorf("row %s: published %d times, want 1", id, got)
		}
	}
	if n, _ := r.Step(context.Background()); n != 0 {
		t.Errorf("second Step claimed %d, want 0", n)
	}
}

// TestFailingMessageRetriesThenDies checks that a message the broker keeps
// refusing is retried with growing delays, becomes DEAD after MaxAttempts, and
// never holds back the messages around it.
func TestFailingMessageRetriesThenDies(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := outboxtest.NewFakeStore(clk.now)
	bad := store.Add(1, "payment.created")[0]
	good := store.Add(2, "payment.created")
	pub := &fakePublisher{fail: map[uuid.UUID]error{bad: errors.New("message too long")}}
	cfg := outbox.Config{BatchSize: 10, MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: time.Minute}
	r := newRelay(cfg, store, pub, clk)

	if _, err := r.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range good {
		if got := store.Row(id).Status; got != "PUBLISHED" {
			t.Errorf("row behind the failing one: got %s, want PUBLISHED", got)
		}
	}
	row := store.Row(bad)
	if row.Status != "PENDING" || row.Message.Attempts != 1 || row.LastError != "message too long" {
		t.Fatalf("failing row: got %s attempts=%d err=%q, want PENDING attempts=1 with the error", row.Status, row.Message.Attempts, row.LastError)
	}
	if d := row.NextAttempt.Sub(clk.now()); d < cfg.BackoffBase/2 || d > cfg.BackoffBase {
		t.Errorf("first retry delay %v, want within [%v, %v]", d, cfg.BackoffBase/2, cfg.BackoffBase)
	}
	// Not due yet: nothing to claim.
	if n, _ := r.Step(context.Background()); n != 0 {
		t.Errorf("claimed %d before the retry was due, want 0", n)
	}

	for attempt := 2; attempt <= cfg.MaxAttempts; attempt++ {
		clk.advance(time.Hour)
		if n, err := r.Step(context.Background()); n != 1 || err != nil {
			t.Fatalf("attempt %d: got %d, %v; want 1, nil", attempt, n, err)
		}
	}
	row = store.Row(bad)
	if row.Status != "DEAD" || row.Message.Attempts != cfg.MaxAttempts {
		t.Errorf("after %d attempts: got %s attempts=%d, want DEAD", cfg.MaxAttempts, row.Status, row.Message.Attempts)
	}
	clk.advance(time.Hour)
	if n, _ := r.Step(context.Background()); n != 0 {
		t.Errorf("claimed %d after DEAD, want 0", n)
	}
}

// TestPermanentFailureDiesAtOnce: a message the broker refused for what it is
// goes DEAD on its first attempt, while a transient failure in the same batch is
// retried as usual.
func TestPermanentFailureDiesAtOnce(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := outboxtest.NewFakeStore(clk.now)
	ids := store.Add(3, "payment.created")
	refused, throttled := ids[0], ids[1]
	pub := &fakePublisher{fail: map[uuid.UUID]error{
		refused:   fmt.Errorf("publish: %w", fmt.Errorf("%w: message too long", outbox.ErrPermanent)),
		throttled: errors.New("throttled"),
	}}
	r := newRelay(outbox.Config{BatchSize: 10, MaxAttempts: 10}, store, pub, clk)
	if _, err := r.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if row := store.Row(refused); row.Status != "DEAD" || row.Message.Attempts != 1 || row.LastError != "publish: refused for good: message too long" {
		t.Errorf("refused row: got %s attempts=%d err=%q, want DEAD after 1 attempt with the error", row.Status, row.Message.Attempts, row.LastError)
	}
	if row := store.Row(throttled); row.Status != "PENDING" || row.Message.Attempts != 1 {
		t.Errorf("throttled row: got %s attempts=%d, want PENDING to retry", row.Status, row.Message.Attempts)
	}
	if row := store.Row(ids[2]); row.Status != "PUBLISHED" {
		t.Errorf("acknowledged row: got %s, want PUBLISHED", row.Status)
	}
}

// TestMissingResultIsNotAnAck guards the rule that only an explicit nil from the
// publisher marks a row PUBLISHED.
func TestMissingResultIsNotAnAck(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := outboxtest.NewFakeStore(clk.now)
	ids := store.Add(3, "payment.created")
	r := newRelay(outbox.Config{BatchSize: 10}, store, &fakePublisher{short: true}, clk)
	if _, err := r.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := store.Row(ids[2]); got.Status != "PENDING" || got.Message.Attempts != 1 {
		t.Errorf("row without a result: got %s attempts=%d, want PENDING attempts=1", got.Status, got.Message.Attempts)
	}
	if got := store.Count("PUBLISHED"); got != 2 {
		t.Errorf("got %d PUBLISHED, want 2", got)
	}
}

// waitFor polls cond until it holds or the deadline passes: tests synchronise on
// state, never on sleeps.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// runRelay runs r until the returned stop is called; stop waits for Run to
// return and fails the test if it returned an error.
func runRelay(t *testing.T, r *outbox.Relay) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// TestRunDrainsBacklogOnWake checks that a wake-up, not the poll, starts the work
// and that full batches keep claiming until the backlog is gone.
func TestRunDrainsBacklogOnWake(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := outboxtest.NewFakeStore(clk.now)
	pub := &fakePublisher{}
	r := newRelay(outbox.Config{BatchSize: 10, Workers: 2, PollInterval: time.Hour}, store, pub, clk)
	stop := runRelay(t, r)
	defer stop()

	store.Add(250, "payment.created")
	r.Wake()
	waitFor(t, "backlog drained", func() bool { return store.Count("PUBLISHED") == 250 })
	store.Add(1, "payment.refunded")
	r.Wake()
	waitFor(t, "new row published", func() bool { return store.Count("PUBLISHED") == 251 })
}

// TestShutdownFinishesInFlightBatch cancels the relay while the broker holds a
// batch: the batch completes and exactly the acknowledged rows are PUBLISHED.
func TestShutdownFinishesInFlightBatch(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := outboxtest.NewFakeStore(clk.now)
	ids := store.Add(5, "payment.created")
	pub := &fakePublisher{
		fail:    map[uuid.UUID]error{ids[1]: errors.New("throttled")},
		entered: make(chan struct{}, 1),
		release: make(chan struct{}),
	}
	r := newRelay(outbox.Config{BatchSize: 10, Workers: 1, PollInterval: time.Hour}, store, pub, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	<-pub.entered // the batch is at the broker
	cancel()
	close(pub.release)
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, id := range ids {
		row := store.Row(id)
		acked := pub.ackCount(id) == 1
		if (row.Status == "PUBLISHED") != acked {
			t.Errorf("row %s: status %s but acknowledged=%v", id, row.Status, acked)
		}
	}
}

// TestStoreOutageIsRetried checks that a failing database delays the relay but
// does not stop it.
func TestStoreOutageIsRetried(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := outboxtest.NewFakeStore(clk.now)
	store.FailClaims(errors.New("connection refused"))
	store.Add(3, "payment.created")
	r := newRelay(outbox.Config{BatchSize: 10, Workers: 1, PollInterval: time.Millisecond}, store, &fakePublisher{}, clk)
	stop := runRelay(t, r)
	defer stop()

	store.FailClaims(nil)
	waitFor(t, "rows published after the outage", func() bool { return store.Count("PUBLISHED") == 3 })
}
