package relay_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/relay"
	"github.com/payments-outbox/payments-outbox/application/relay/relaytest"
)

// heldStore holds the first ClaimBatch, before it claims, until another
// call begins or hold has passed, and records whether one began: whether a
// second claim transaction could open while the first was at the database.
type heldStore struct {
	*relaytest.FakeStore
	hold time.Duration

	mu         sync.Mutex
	calls      int
	overlapped bool
	second     chan struct{}
}

func newHeldStore(now func() time.Time, hold time.Duration) *heldStore {
	return &heldStore{FakeStore: relaytest.NewFakeStore(now), hold: hold, second: make(chan struct{})}
}

func (s *heldStore) ClaimBatch(ctx context.Context, c relay.Claim, fn func([]outbox.Message) (relay.BatchResult, error)) (int, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	if n == 2 {
		close(s.second)
	}
	s.mu.Unlock()
	if n == 1 {
		select {
		case <-s.second:
			s.mu.Lock()
			s.overlapped = true
			s.mu.Unlock()
		case <-time.After(s.hold):
		}
	}
	return s.FakeStore.ClaimBatch(ctx, c, fn)
}

func (s *heldStore) secondBeganDuringFirst() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overlapped
}

// TestFastBrokerOneTransactionAtATime: against a broker that answers at once,
// the four workers of a replica with one turn (ActiveClaims 1, or one of
// two replicas by default), each with rows waiting, take turns at the
// database instead of keeping four claim transactions open on it.
func TestFastBrokerOneTransactionAtATime(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := newHeldStore(clk.now, 200*time.Millisecond)
	store.Add(400, "payment.created") // rows in every partition, so every worker has some
	r := relay.New(store, &fakePublisher{}, discard(), nil, clk.now,
		relay.Config{BatchSize: 10, Workers: 4, PollInterval: time.Hour, ActiveClaims: 1})
	stop := runRelay(t, r)
	defer stop()

	waitFor(t, "backlog drained", func() bool { return store.Count("PUBLISHED") == 400 })
	if store.secondBeganDuringFirst() {
		t.Error("a second claim transaction opened while the first was claiming; want one at a time")
	}
}

// TestAloneAReplicaTakesEveryTurn: a replica with no other alive has all
// of ActiveClaims (2 by default) to itself.
func TestAloneAReplicaTakesEveryTurn(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := newHeldStore(clk.now, 10*time.Second)
	store.Add(400, "payment.created")
	r := relay.New(store, &fakePublisher{}, discard(), nil, clk.now,
		relay.Config{BatchSize: 10, Workers: 4, PollInterval: time.Hour})
	stop := runRelay(t, r)
	defer stop()

	waitFor(t, "backlog drained", func() bool { return store.Count("PUBLISHED") == 400 })
	if !store.secondBeganDuringFirst() {
		t.Error("no second claim transaction opened while the first was claiming; want two at a time, alone with ActiveClaims' default 2")
	}
}

// TestSlowBrokerPublishesWithEveryWorker: once a batch's publish has taken
// longer than its claim, the turn passes on, so against a slow broker every
// worker has a batch at the broker at once, as without turns.
func TestSlowBrokerPublishesWithEveryWorker(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := relaytest.NewFakeStore(clk.now)
	store.Add(400, "payment.created")
	pub := &fakePublisher{entered: make(chan struct{}, 100), release: make(chan struct{})}
	r := relay.New(store, pub, discard(), nil, clk.now,
		relay.Config{BatchSize: 10, Workers: 4, PollInterval: time.Hour, ActiveClaims: 1})
	stop := runRelay(t, r)
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
