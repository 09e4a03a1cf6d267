package partition_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition/partitiontest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

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

// orderedPublisher records the order in which messages were acknowledged
// and fails those in fail.
type orderedPublisher struct {
	mu    sync.Mutex
	fail  map[uuid.UUID]error
	acked []uuid.UUID
}

func (p *orderedPublisher) Publish(_ context.Context, msgs []outbox.Message) []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		if errs[i] = p.fail[m.ID]; errs[i] == nil {
			p.acked = append(p.acked, m.ID)
		}
	}
	return errs
}

func (p *orderedPublisher) index(id uuid.UUID) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Index(p.acked, id)
}

func orderedRelay(store partition.Store, pub outbox.Publisher, clk *clock, cfg outbox.Config) *outbox.Relay {
	return outbox.NewRelay(partition.NewOrdered(store, logtest.Discard(), nil, partition.Config{}), pub, logtest.Discard(), nil, clk.now, cfg)
}

// TestOrderedFailureHoldsBackOnlyItsAggregate: in ordered mode a row the
// broker refuses holds back the rows of its own aggregate behind it, until
// its retry succeeds; the other aggregates' rows go on meanwhile, each in
// order.
func TestOrderedFailureHoldsBackOnlyItsAggregate(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := partitiontest.NewFakeStore(clk.now)
	x, y := uuid.New(), uuid.New()
	xs := store.AddFor(x, 3, "payment.refunded")
	ys := store.AddFor(y, 3, "payment.refunded")
	pub := &orderedPublisher{fail: map[uuid.UUID]error{xs[0]: errors.New("throttled")}}
	r := orderedRelay(store, pub, clk, outbox.Config{BatchSize: 10, BackoffBase: time.Minute, BackoffMax: time.Minute})

	for range 5 { // more steps than y needs: x must still wait
		if _, err := r.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ys {
		if store.Row(id).Status != "PUBLISHED" {
			t.Errorf("y's row %s is %s: another aggregate's failure held it back", id, store.Row(id).Status)
		}
	}
	for _, id := range xs[1:] {
		if st := store.Row(id).Status; st != "PENDING" || pub.index(id) >= 0 {
			t.Errorf("x's row %s is %s: it went ahead of x's failed first row", id, st)
		}
	}

	pub.mu.Lock()
	delete(pub.fail, xs[0]) // the broker is back; the retry is due after the backoff
	pub.mu.Unlock()
	clk.advance(time.Minute)
	for range 4 {
		if _, err := r.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range ys[1:] {
		if pub.index(ys[i]) > pub.index(ys[i+1]) {
			t.Errorf("y's rows %d and %d acknowledged out of order", i, i+1)
		}
	}
	for i, id := range xs {
		if store.Row(id).Status != "PUBLISHED" {
			t.Fatalf("x's row %d is %s after the retry, want PUBLISHED", i, store.Row(id).Status)
		}
		if i > 0 && pub.index(xs[i-1]) > pub.index(id) {
			t.Errorf("x's rows %d and %d acknowledged out of order", i-1, i)
		}
	}
}

// TestOrderedDeadRowLetsItsAggregateGoOn: a row that goes DEAD stops holding
// back its aggregate; the rows behind it are published, so the DEAD event
// is missing from the stream, and when an operator requeues it, it arrives
// after them (late, out of its place).
func TestOrderedDeadRowLetsItsAggregateGoOn(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := partitiontest.NewFakeStore(clk.now)
	x := uuid.New()
	xs := store.AddFor(x, 3, "payment.refunded")
	pub := &orderedPublisher{fail: map[uuid.UUID]error{xs[0]: fmt.Errorf("%w: too large", outbox.ErrPermanent)}}
	r := orderedRelay(store, pub, clk, outbox.Config{BatchSize: 10})
	for range 4 {
		if _, err := r.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if st := store.Row(xs[0]).Status; st != "DEAD" {
		t.Fatalf("refused row is %s, want DEAD", st)
	}
	for _, id := range xs[1:] {
		if st := store.Row(id).Status; st != "PUBLISHED" {
			t.Errorf("row %s behind the DEAD one is %s, want PUBLISHED", id, st)
		}
	}
	if pub.index(xs[1]) > pub.index(xs[2]) {
		t.Error("the rows behind the DEAD one went out of order")
	}
}

// recordingStore records the partitions of each claim.
type recordingStore struct {
	*partitiontest.FakeStore

	mu      sync.Mutex
	claims  [][]int
	reading map[int]int // partition → claims reading it now
	overlap bool        // two claims read one partition at once
}

func newRecordingStore() *recordingStore {
	return &recordingStore{FakeStore: partitiontest.NewFakeStore(nil), reading: map[int]int{}}
}

func (s *recordingStore) ClaimInOrder(ctx context.Context, c partition.Claim, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	s.mu.Lock()
	s.claims = append(s.claims, slices.Clone(c.Owned))
	for _, p := range c.Owned {
		s.reading[p]++
		s.overlap = s.overlap || s.reading[p] > 1
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		for _, p := range c.Owned {
			s.reading[p]--
		}
		s.mu.Unlock()
	}()
	return s.FakeStore.ClaimInOrder(ctx, c, publish)
}

func (s *recordingStore) claimed() [][]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.claims)
}

func ackAll(_ context.Context, msgs []outbox.Message) outbox.Result {
	res := outbox.Result{PublishedAt: time.Now()}
	for _, m := range msgs {
		res.Published = append(res.Published, m.ID)
	}
	return res
}

// broker is a publish that says when a batch is at it and acknowledges it
// once release is closed.
type broker struct {
	holding chan struct{}
	release chan struct{}
}

func newBroker() broker {
	return broker{holding: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b broker) publish(ctx context.Context, msgs []outbox.Message) outbox.Result {
	b.holding <- struct{}{}
	<-b.release
	return ackAll(ctx, msgs)
}

// TestABacklogDrainsOnePartitionAtATime: a claim reads every partition no
// other claim reads; when it comes back full, the claims after it read one
// of those partitions each, until each comes back short.
func TestABacklogDrainsOnePartitionAtATime(t *testing.T) {
	t.Parallel()
	store := newRecordingStore()
	store.Add(40, "payment.created") // in most of the 8 partitions
	o := partition.NewOrdered(store, logtest.Discard(), nil, partition.Config{})
	ctx := context.Background()
	const limit = 5
	if n, err := o.Claim(ctx, limit, ackAll); err != nil || n != limit {
		t.Fatalf("first claim: %d, %v; want a full batch of %d", n, err, limit)
	}
	if got := store.claimed()[0]; len(got) != partitiontest.FakePartitions {
		t.Fatalf("first claim read partitions %v, want all %d", got, partitiontest.FakePartitions)
	}
	for i := 0; store.Count("PENDING") > 0; i++ {
		if i > 100 {
			t.Fatalf("%d rows still PENDING after 100 claims", store.Count("PENDING"))
		}
		if _, err := o.Claim(ctx, limit, ackAll); err != nil {
			t.Fatal(err)
		}
		if got := store.claimed()[i+1]; len(got) != 1 {
			t.Fatalf("claim %d after the full one read partitions %v, want one", i+1, got)
		}
	}
}

// TestAThinBacklogDrainsInFullBatches: a backlog of a few rows in each of
// many partitions is drained one partition at a time, but each call goes on
// to the next partition until it has a batch's worth, so every call but the
// last reports a full batch and the relay keeps claiming.
func TestAThinBacklogDrainsInFullBatches(t *testing.T) {
	t.Parallel()
	store := newRecordingStore()
	for p := range partitiontest.FakePartitions {
		for range 3 {
			store.AddFor(aggregateIn(p), 1, "payment.created")
		}
	}
	o := partition.NewOrdered(store, logtest.Discard(), nil, partition.Config{})
	ctx := context.Background()
	const limit = 5
	var got []int
	for store.Count("PENDING") > 0 {
		if len(got) > 20 {
			t.Fatalf("%d rows still PENDING after 20 calls: %v", store.Count("PENDING"), got)
		}
		n, err := o.Claim(ctx, limit, ackAll)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	for i, n := range got[:len(got)-1] {
		if n < limit {
			t.Errorf("call %d of %d claimed %d rows with a backlog left (calls %v); want a full batch's worth", i, len(got), n, got)
		}
	}
}

// TestClaimsReadDifferentPartitions: a claim made while others are at the
// broker reads none of their partitions; once every partition is being
// read, the next claim waits for one to come free rather than claiming
// nothing, so a row committed meanwhile is not left for the next poll.
func TestClaimsReadDifferentPartitions(t *testing.T) {
	t.Parallel()
	store := newRecordingStore()
	for p := range partitiontest.FakePartitions {
		for range 10 {
			store.AddFor(aggregateIn(p), 1, "payment.created")
		}
	}
	o := partition.NewOrdered(store, logtest.Discard(), nil, partition.Config{})
	ctx := context.Background()
	const limit = 5
	if n, err := o.Claim(ctx, limit, ackAll); err != nil || n != limit { // every partition backlogged
		t.Fatalf("first claim: %d, %v; want a full batch of %d", n, err, limit)
	}

	b := newBroker()
	var wg sync.WaitGroup
	for range partitiontest.FakePartitions {
		wg.Go(func() { _, _ = o.Claim(ctx, limit, b.publish) })
	}
	for range partitiontest.FakePartitions {
		<-b.holding // a batch of each partition at the broker at once
	}
	waiting := make(chan int)
	go func() { n, _ := o.Claim(ctx, limit, ackAll); waiting <- n }()
	select {
	case got := <-waiting:
		t.Fatalf("a claim with every partition being read returned %d at once; want it to wait", got)
	case <-time.After(50 * time.Millisecond): // (a right Ordered passes however long this is)
	}
	close(b.release)
	wg.Wait()
	<-waiting
	store.mu.Lock()
	defer store.mu.Unlock()
	if store.overlap {
		t.Errorf("two claims read one partition at once: %v", store.claims)
	}
}

// aggregateIn returns a new aggregate id of partition p of the fake's.
func aggregateIn(p int) uuid.UUID {
	for {
		if id := uuid.New(); partition.Of(id, partitiontest.FakePartitions) == p {
			return id
		}
	}
}

// TestStopReleasesTheLeasesAfterTheBatchInHand: Run, stopped while a batch
// is at the broker, keeps the leases until that batch commits, then gives
// them up; no claim starts after the stop.
func TestStopReleasesTheLeasesAfterTheBatchInHand(t *testing.T) {
	t.Parallel()
	store := newRecordingStore()
	ids := store.Add(3, "payment.created")
	o := partition.NewOrdered(store, logtest.Discard(), nil, partition.Config{Owner: "a"})
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error)
	go func() { ran <- o.Run(ctx) }()
	b := newBroker()
	claimed := make(chan int)
	go func() { n, _ := o.Claim(context.Background(), 10, b.publish); claimed <- n }()
	<-b.holding
	stop()
	select {
	case <-ran:
		t.Fatal("Run returned with a batch at the broker")
	case <-time.After(50 * time.Millisecond): // (a right Ordered passes however long this is)
	}
	close(b.release)
	if n := <-claimed; n != len(ids) {
		t.Errorf("the batch in hand claimed %d, want %d", n, len(ids))
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if s := store.Row(id).Status; s != "PUBLISHED" {
			t.Errorf("row %s is %s after the stop, want PUBLISHED: the batch in hand finishes", id, s)
		}
	}
	if n, _ := o.Claim(context.Background(), 10, ackAll); n != 0 {
		t.Errorf("a claim after Run stopped locked %d rows, want none", n)
	}
	other, err := store.Heartbeat(context.Background(), "b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(other.Owned) != other.Partitions {
		t.Errorf("after a stopped, b takes %d of %d partitions; want all: a released its leases", len(other.Owned), other.Partitions)
	}
}
