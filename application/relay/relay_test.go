package relay_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/relay"
	"github.com/payments-outbox/payments-outbox/application/relay/relaytest"
)

// fakeStore is an in-memory outbox with the same claim semantics as the Postgres
// one: due PENDING rows, oldest due first, rows claimed by a running batch skipped.
type fakeStore struct {
	mu     sync.Mutex
	now    func() time.Time
	rows   []*fakeRow
	failOn error // ClaimBatch fails with it when set
}

type fakeRow struct {
	msg         relay.Message
	status      string
	lastError   string
	nextAttempt time.Time
	locked      bool
}

func (s *fakeStore) add(n int, typ string) []uuid.UUID {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.New()
		s.rows = append(s.rows, &fakeRow{
			msg:         relay.Message{ID: ids[i], Type: typ, Payload: []byte(`{}`), CreatedAt: s.now()},
			status:      "PENDING",
			nextAttempt: s.now(),
		})
	}
	return ids
}

func (s *fakeStore) ClaimBatch(ctx context.Context, limit int, fn func([]relay.Message) (relay.Outcome, error)) (int, error) {
	s.mu.Lock()
	if s.failOn != nil {
		s.mu.Unlock()
		return 0, s.failOn
	}
	var due []*fakeRow
	for _, r := range s.rows {
		if r.status == "PENDING" && !r.locked && !r.nextAttempt.After(s.now()) {
			due = append(due, r)
		}
	}
	slices.SortStableFunc(due, func(a, b *fakeRow) int { return a.nextAttempt.Compare(b.nextAttempt) })
	if len(due) > limit {
		due = due[:limit]
	}
	msgs := make([]relay.Message, len(due))
	for i, r := range due {
		r.locked = true
		msgs[i] = r.msg
	}
	s.mu.Unlock()
	if len(msgs) == 0 {
		return 0, nil
	}

	out, err := fn(msgs)

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range due {
		r.locked = false
	}
	if err != nil {
		return 0, err
	}
	byID := map[uuid.UUID]*fakeRow{}
	for _, r := range due {
		byID[r.msg.ID] = r
	}
	for _, id := range out.Published {
		byID[id].status = "PUBLISHED"
	}
	for _, f := range out.Retry {
		r := byID[f.ID]
		r.msg.Attempts++
		r.lastError, r.nextAttempt = f.Error, f.NextAttemptAt
	}
	for _, f := range out.Dead {
		r := byID[f.ID]
		r.msg.Attempts++
		r.lastError, r.status = f.Error, "DEAD"
	}
	return len(msgs), nil
}

func (s *fakeStore) row(id uuid.UUID) fakeRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rows {
		if r.msg.ID == id {
			return *r
		}
	}
	return fakeRow{}
}

func (s *fakeStore) count(status string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.rows {
		if r.status == status {
			n++
		}
	}
	return n
}

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

func (p *fakePublisher) Publish(ctx context.Context, msgs []relay.Message) []error {
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

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newRelay(cfg relay.Config, store *fakeStore, pub relay.Publisher, clk *clock) *relay.Relay {
	return relay.New(cfg, store, pub, discard(), nil, clk.now)
}

func TestStepPublishesAndMarks(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := &fakeStore{now: clk.now}
	ids := store.add(3, "payment.created")
	pub := &fakePublisher{}
	r := newRelay(relay.Config{BatchSize: 10}, store, pub, clk)

	n, err := r.Step(context.Background())
	if err != nil || n != 3 {
		t.Fatalf("Step: got %d, %v; want 3, nil", n, err)
	}
	for _, id := range ids {
		if got := store.row(id).status; got != "PUBLISHED" {
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
	store := &fakeStore{now: clk.now}
	bad := store.add(1, "payment.created")[0]
	good := store.add(2, "payment.created")
	pub := &fakePublisher{fail: map[uuid.UUID]error{bad: errors.New("message too long")}}
	cfg := relay.Config{BatchSize: 10, MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: time.Minute}
	r := newRelay(cfg, store, pub, clk)

	if _, err := r.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range good {
		if got := store.row(id).status; got != "PUBLISHED" {
			t.Errorf("row behind the failing one: got %s, want PUBLISHED", got)
		}
	}
	row := store.row(bad)
	if row.status != "PENDING" || row.msg.Attempts != 1 || row.lastError != "message too long" {
		t.Fatalf("failing row: got %s attempts=%d err=%q, want PENDING attempts=1 with the error", row.status, row.msg.Attempts, row.lastError)
	}
	if d := row.nextAttempt.Sub(clk.now()); d < cfg.BackoffBase/2 || d > cfg.BackoffBase {
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
	row = store.row(bad)
	if row.status != "DEAD" || row.msg.Attempts != cfg.MaxAttempts {
		t.Errorf("after %d attempts: got %s attempts=%d, want DEAD", cfg.MaxAttempts, row.status, row.msg.Attempts)
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
	store := &fakeStore{now: clk.now}
	ids := store.add(3, "payment.created")
	refused, throttled := ids[0], ids[1]
	pub := &fakePublisher{fail: map[uuid.UUID]error{
		refused:   fmt.Errorf("publish: %w", relay.Permanent(errors.New("message too long"))),
		throttled: errors.New("throttled"),
	}}
	r := newRelay(relay.Config{BatchSize: 10, MaxAttempts: 10}, store, pub, clk)
	if _, err := r.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if row := store.row(refused); row.status != "DEAD" || row.msg.Attempts != 1 || row.lastError != "publish: message too long" {
		t.Errorf("refused row: got %s attempts=%d err=%q, want DEAD after 1 attempt with the error", row.status, row.msg.Attempts, row.lastError)
	}
	if row := store.row(throttled); row.status != "PENDING" || row.msg.Attempts != 1 {
		t.Errorf("throttled row: got %s attempts=%d, want PENDING to retry", row.status, row.msg.Attempts)
	}
	if row := store.row(ids[2]); row.status != "PUBLISHED" {
		t.Errorf("acknowledged row: got %s, want PUBLISHED", row.status)
	}
	if relay.IsPermanent(errors.New("x")) || relay.Permanent(nil) != nil {
		t.Error("IsPermanent of a plain error, or Permanent(nil), is wrong")
	}
}

// TestMissingResultIsNotAnAck guards the rule that only an explicit nil from the
// publisher marks a row PUBLISHED.
func TestMissingResultIsNotAnAck(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := &fakeStore{now: clk.now}
	ids := store.add(3, "payment.created")
	r := newRelay(relay.Config{BatchSize: 10}, store, &fakePublisher{short: true}, clk)
	if _, err := r.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := store.row(ids[2]); got.status != "PENDING" || got.msg.Attempts != 1 {
		t.Errorf("row without a result: got %s attempts=%d, want PENDING attempts=1", got.status, got.msg.Attempts)
	}
	if got := store.count("PUBLISHED"); got != 2 {
		t.Errorf("got %d PUBLISHED, want 2", got)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	base, ceiling := time.Second, time.Minute
	tests := []struct {
		attempts int
		rnd      float64
		want     time.Duration
	}{
		{attempts: 1, rnd: 0, want: 500 * time.Millisecond},
		{attempts: 1, rnd: 0.999999999, want: time.Second},
		{attempts: 2, rnd: 0, want: time.Second},
		{attempts: 3, rnd: 0.5, want: 3 * time.Second},
		{attempts: 7, rnd: 0, want: 30 * time.Second},    // 64s capped to 60s
		{attempts: 1000, rnd: 0, want: 30 * time.Second}, // no overflow
		{attempts: 1000, rnd: 0.5, want: 45 * time.Second},
	}
	for _, tt := range tests {
		got := relay.Backoff(tt.attempts, base, ceiling, tt.rnd)
		if got.Round(time.Millisecond) != tt.want {
			t.Errorf("Backoff(%d, rnd=%v): got %v, want %v", tt.attempts, tt.rnd, got, tt.want)
		}
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

// TestRunDrainsBacklogOnWake checks that a wake-up, not the poll, starts the work
// and that full batches keep claiming until the backlog is gone.
func TestRunDrainsBacklogOnWake(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := &fakeStore{now: clk.now}
	pub := &fakePublisher{}
	r := newRelay(relay.Config{BatchSize: 10, Workers: 2, PollInterval: time.Hour}, store, pub, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	store.add(250, "payment.created")
	r.Wake()
	waitFor(t, "backlog drained", func() bool { return store.count("PUBLISHED") == 250 })
	store.add(1, "payment.refunded")
	r.Wake()
	waitFor(t, "new row published", func() bool { return store.count("PUBLISHED") == 251 })

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestShutdownFinishesInFlightBatch cancels the relay while the broker holds a
// batch: the batch completes and exactly the acknowledged rows are PUBLISHED.
func TestShutdownFinishesInFlightBatch(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := &fakeStore{now: clk.now}
	ids := store.add(5, "payment.created")
	pub := &fakePublisher{
		fail:    map[uuid.UUID]error{ids[1]: errors.New("throttled")},
		entered: make(chan struct{}, 1),
		release: make(chan struct{}),
	}
	r := newRelay(relay.Config{BatchSize: 10, Workers: 1, PollInterval: time.Hour}, store, pub, clk)
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
		row := store.row(id)
		acked := pub.ackCount(id) == 1
		if (row.status == "PUBLISHED") != acked {
			t.Errorf("row %s: status %s but acknowledged=%v", id, row.status, acked)
		}
	}
}

// TestStoreOutageIsRetried checks that a failing database delays the relay but
// does not stop it.
func TestStoreOutageIsRetried(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := &fakeStore{now: clk.now, failOn: errors.New("connection refused")}
	store.add(3, "payment.created")
	r := newRelay(relay.Config{BatchSize: 10, Workers: 1, PollInterval: time.Millisecond}, store, &fakePublisher{}, clk)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	store.mu.Lock()
	store.failOn = nil
	store.mu.Unlock()
	waitFor(t, "rows published after the outage", func() bool { return store.count("PUBLISHED") == 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestFakeStoreContract keeps the fake honest: it must pass the same contract as
// the Postgres store, or the tests above would prove nothing.
func TestFakeStoreContract(t *testing.T) {
	t.Parallel()
	relaytest.TestStore(t, func(t *testing.T) relaytest.Harness {
		s := &fakeStore{now: time.Now}
		return relaytest.Harness{
			Store: s,
			Insert: func(t *testing.T, n int) []uuid.UUID {
				ids := s.add(n, "payment.created")
				// Strictly increasing due times keep "oldest first" well defined.
				s.mu.Lock()
				for i, r := range s.rows[len(s.rows)-n:] {
					r.nextAttempt = r.nextAttempt.Add(time.Duration(i-n) * time.Microsecond)
				}
				s.mu.Unlock()
				return ids
			},
			State: func(t *testing.T, id uuid.UUID) (string, int) {
				r := s.row(id)
				return r.status, r.msg.Attempts
			},
		}
	})
}
