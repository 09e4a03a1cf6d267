package turns_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/outboxtest"
	"github.com/payments-outbox/payments-outbox/application/outbox/turns"
)

// ended is a context that has ended: Take with it takes a free turn or
// gives up at once.
var ended = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// TestTurnsAreSharedByTheReplicas: each of n replicas has turns/n turns,
// at least one, and Take waits while they are all taken.
func TestTurnsAreSharedByTheReplicas(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ turns, replicas, want int }{
		{turns: 2, replicas: 1, want: 2},
		{turns: 2, replicas: 2, want: 1},
		{turns: 2, replicas: 8, want: 1},
		{turns: 8, replicas: 3, want: 2},
		{turns: 2, replicas: 0, want: 2}, // before the first heartbeat: alone
		{turns: 0, replicas: 1, want: 1},
	} {
		l := turns.NewLimiter(c.turns)
		l.Share(c.replicas)
		got := 0
		for got <= c.want {
			if _, ok := l.Take(ended); !ok { // takes a free turn, never waits
				break
			}
			got++
		}
		if got != c.want {
			t.Errorf("%d turns, %d replicas: got %d turns at once, want %d", c.turns, c.replicas, got, c.want)
		}
	}
}

// TestALeftTurnLetsTheNextIn: a replica whose share grows, or whose turn
// is given back, lets a waiting worker in.
func TestALeftTurnLetsTheNextIn(t *testing.T) {
	t.Parallel()
	l := turns.NewLimiter(2)
	l.Share(2) // one turn
	ctx := context.Background()
	first, ok := l.Take(ctx)
	if !ok {
		t.Fatal("Take: no turn")
	}
	got := make(chan *turns.Turn)
	go func() { u, _ := l.Take(ctx); got <- u }()
	l.Share(1) // the other replica left: two turns
	if <-got == nil {
		t.Fatal("a second turn after the share grew: none")
	}
	go func() { u, _ := l.Take(ctx); got <- u }()
	first.Pass()
	first.Pass() // a second Pass gives nothing back twice
	if <-got == nil {
		t.Fatal("a turn after one was passed: none")
	}
	if _, ok := l.Take(ended); ok {
		t.Error("a third turn of two: a Pass counted twice")
	}
}

// heldStore holds the first Claim, before it claims, until another call
// begins or hold has passed, and records whether one began: whether a
// second claim transaction could open while the first was at the database.
type heldStore struct {
	*outboxtest.FakeStore
	hold time.Duration

	mu         sync.Mutex
	calls      int
	holding    bool // the first call is held
	overlapped bool
	second     chan struct{}
}

func newHeldStore(hold time.Duration) *heldStore {
	return &heldStore{FakeStore: outboxtest.NewFakeStore(nil), hold: hold, second: make(chan struct{})}
}

func (s *heldStore) Claim(ctx context.Context, limit int, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	switch n {
	case 1:
		s.holding = true
	case 2:
		// Recorded here, by the second call: the first, once released,
		// may not run again before the test reads it.
		s.overlapped = s.holding
		close(s.second)
	}
	s.mu.Unlock()
	if n == 1 {
		select {
		case <-s.second:
		case <-time.After(s.hold):
		}
		s.mu.Lock()
		s.holding = false
		s.mu.Unlock()
	}
	return s.FakeStore.Claim(ctx, limit, publish)
}

func (s *heldStore) secondBeganDuringFirst() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overlapped
}

// publisher acknowledges every message, after release is closed if set,
// and signals entered on each call if set.
type publisher struct {
	entered chan struct{}
	release chan struct{}
}

func (p publisher) Publish(_ context.Context, msgs []outbox.Message) []error {
	if p.entered != nil {
		p.entered <- struct{}{}
	}
	if p.release != nil {
		<-p.release
	}
	return make([]error, len(msgs))
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func run(t *testing.T, r *outbox.Relay) (stop func()) {
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

// TestFastBrokerOneTransactionAtATime: against a broker that answers at
// once, the four workers of a relay with one turn, each with rows waiting,
// take turns at the database instead of keeping four claim transactions
// open on it.
func TestFastBrokerOneTransactionAtATime(t *testing.T) {
	t.Parallel()
	store := newHeldStore(200 * time.Millisecond)
	store.Add(400, "payment.created")
	r := outbox.NewRelay(turns.NewLimiter(1).Store(store), publisher{}, discard(), nil, nil,
		outbox.Config{BatchSize: 10, Workers: 4, PollInterval: time.Hour})
	stop := run(t, r)
	defer stop()

	waitFor(t, "backlog drained", func() bool { return store.Count("PUBLISHED") == 400 })
	if store.secondBeganDuringFirst() {
		t.Error("a second claim transaction opened while the first was claiming; want one at a time")
	}
}

// TestTwoTurnsTwoTransactions: with two turns, a second claim opens while
// the first is at the database (the test above would pass with none).
func TestTwoTurnsTwoTransactions(t *testing.T) {
	t.Parallel()
	store := newHeldStore(10 * time.Second)
	store.Add(400, "payment.created")
	r := outbox.NewRelay(turns.NewLimiter(2).Store(store), publisher{}, discard(), nil, nil,
		outbox.Config{BatchSize: 10, Workers: 4, PollInterval: time.Hour})
	stop := run(t, r)
	defer stop()

	waitFor(t, "backlog drained", func() bool { return store.Count("PUBLISHED") == 400 })
	if !store.secondBeganDuringFirst() {
		t.Error("no second claim transaction opened while the first was claiming; want two at a time")
	}
}

// TestSlowBrokerPublishesWithEveryWorker: once a batch's publish has taken
// longer than its claim, the turn passes on, so against a slow broker every
// worker has a batch at the broker at once, as without turns.
func TestSlowBrokerPublishesWithEveryWorker(t *testing.T) {
	t.Parallel()
	store := outboxtest.NewFakeStore(nil)
	store.Add(400, "payment.created")
	pub := publisher{entered: make(chan struct{}, 100), release: make(chan struct{})}
	r := outbox.NewRelay(turns.NewLimiter(1).Store(store), pub, discard(), nil, nil,
		outbox.Config{BatchSize: 10, Workers: 4, PollInterval: time.Hour})
	stop := run(t, r)
	defer stop()

	deadline := time.After(10 * time.Second)
	for i := range 4 {
		select {
		case <-pub.entered:
		case <-deadline:
			close(pub.release) // so that stop's in-flight batches end
			t.Fatalf("batches at the broker at once: got %d, want 4 (one per worker)", i)
		}
	}
	close(pub.release)
	waitFor(t, "backlog drained", func() bool { return store.Count("PUBLISHED") == 400 })
}

// TestAStopEndsTheWaitForATurn: a claim stopped while it waits for a turn
// claims nothing: the relay's workers leave at once on a stop, and only the
// batches in hand finish.
func TestAStopEndsTheWaitForATurn(t *testing.T) {
	t.Parallel()
	store := outboxtest.NewFakeStore(nil)
	store.Add(10, "payment.created")
	l := turns.NewLimiter(1)
	held, _ := l.Take(context.Background())
	defer held.Pass()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		n, err := l.Store(store).Claim(ctx, 10, func(context.Context, []outbox.Message) outbox.Result {
			t.Error("claimed without a turn")
			return outbox.Result{}
		})
		if err != nil {
			t.Error(err)
		}
		done <- n
	}()
	stop()
	if n := <-done; n != 0 {
		t.Errorf("a claim stopped while it waited for a turn locked %d rows, want 0", n)
	}
	if n := store.Count("PENDING"); n != 10 {
		t.Errorf("%d rows PENDING, want all 10", n)
	}
}
