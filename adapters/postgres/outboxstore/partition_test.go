package outboxstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// TestPartitionOfMatchesTheDatabase holds partition.Of, the documented
// hash, and the SQL function outbox_partition the indexes are built on
// together, for several partition counts.
func TestPartitionOfMatchesTheDatabase(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	ids := make([]uuid.UUID, 500)
	for i := range ids {
		ids[i] = uuid.New()
	}
	ids[0] = uuid.Nil
	ids[1] = uuid.Max
	for _, n := range []int{1, 7, 64, 1024} {
		rows, err := pool.Query(context.Background(), `SELECT outbox_partition(id, $2) FROM unnest($1::uuid[]) WITH ORDINALITY AS u(id, i) ORDER BY i`, ids, n)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for rows.Next() {
			var p int
			if err := rows.Scan(&p); err != nil {
				t.Fatal(err)
			}
			got = append(got, p)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			if want := partition.Of(id, n); got[i] != want {
				t.Errorf("partition of %s among %d: database %d, partition.Of %d", id, n, got[i], want)
			}
		}
	}
}

// replica is one ordered relay with its own pool, as a separate process
// has, wired as cmd/payments wires it.
type replica struct {
	r      *outbox.Relay
	o      *partition.Ordered
	cancel context.CancelFunc
	done   chan struct{}
}

// noRelease is a store whose Release does nothing: a replica built on it
// stops as a killed process does, its leases left to expire.
type noRelease struct{ *outboxstore.Store }

func (noRelease) Release(context.Context, string) error { return nil }

func startReplica(t *testing.T, pool *pgxpool.Pool, cfg outbox.Config, pcfg partition.Config, pub outbox.Publisher, crash bool) *replica {
	t.Helper()
	p, err := pgxpool.New(context.Background(), pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	var store partition.Store = outboxstore.New(p)
	if crash {
		store = noRelease{outboxstore.New(p)}
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := partition.NewOrdered(store, logtest.Discard(), nil, pcfg)
	rp := &replica{r: outbox.NewRelay(o, pub, logtest.Discard(), nil, time.Now, cfg), o: o, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rp.done)
		var g errgroup.Group
		g.Go(func() error { return rp.r.Run(ctx) })
		g.Go(func() error { return o.Run(ctx) })
		g.Go(func() error { return outboxstore.ListenRebalance(ctx, p, logtest.Discard(), rp.r.Wake, o.Rebalance) })
		if err := g.Wait(); err != nil {
			t.Errorf("relay %s: %v", o.Owner(), err)
		}
	}()
	t.Cleanup(rp.stop)
	return rp
}

func (rp *replica) stop() {
	rp.cancel()
	<-rp.done
}

// owners reads the lease table: owner per partition, "" for none.
func owners(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	o, err := outboxstore.New(pool).Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func holds(o []string, owner string) (n int) {
	for _, x := range o {
		if x == owner {
			n++
		}
	}
	return n
}

// TestReplicasSharePartitionsWithoutOverlap starts three ordered replicas:
// they settle on a third of the partitions each (the lease table holds one
// owner per partition), each replica's workers claim only from what it
// holds, and every row is published exactly once.
func TestReplicasSharePartitionsWithoutOverlap(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	pub := &partitionPublisher{}
	cfg := outbox.Config{BatchSize: 20, Workers: 2, PollInterval: 10 * time.Millisecond}
	pcfg := partition.Config{LeaseDuration: 3 * time.Second, Heartbeat: 50 * time.Millisecond}
	var reps []*replica
	for range 3 {
		reps = append(reps, startReplica(t, pool, cfg, pcfg, pub, false))
	}
	waitFor(t, 30*time.Second, "three replicas holding their fair shares", func() bool {
		o := owners(t, pool)
		for _, rp := range reps {
			if holds(o, rp.o.Owner()) != partition.FairShare(len(o), ownerNames(reps), rp.o.Owner()) {
				return false
			}
		}
		return true
	})
	pub.setReplicas(reps)
	const rows = 600
	ids := insertRows(t, pool, rows, "payment.created")
	waitFor(t, time.Minute, "all rows PUBLISHED", func() bool { return countStatus(t, pool, "PUBLISHED") == rows })
	pub.mu.Lock()
	defer pub.mu.Unlock()
	for _, id := range ids {
		if c := pub.count[id]; c != 1 {
			t.Errorf("row %s published %d times, want 1", id, c)
		}
	}
	for _, e := range pub.foreign {
		t.Error(e)
	}
}

func ownerNames(reps []*replica) []string {
	var n []string
	for _, rp := range reps {
		n = append(n, rp.o.Owner())
	}
	return n
}

// partitionPublisher counts publishes per message and, once told the
// replicas, checks that each message it is handed belongs to a partition
// one of them holds — and only one.
type partitionPublisher struct {
	mu      sync.Mutex
	count   map[uuid.UUID]int
	reps    []*replica
	foreign []string
}

func (p *partitionPublisher) setReplicas(reps []*replica) {
	p.mu.Lock()
	p.reps = reps
	p.mu.Unlock()
}

func (p *partitionPublisher) Publish(_ context.Context, msgs []outbox.Message) []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.count == nil {
		p.count = map[uuid.UUID]int{}
	}
	for _, m := range msgs {
		p.count[m.ID]++
		holders := 0
		for _, rp := range p.reps {
			n, owned := rp.o.Owned()
			if slices.Contains(owned, partition.Of(m.AggregateID, n)) {
				holders++
			}
		}
		if p.reps != nil && holders != 1 {
			p.foreign = append(p.foreign, fmt.Sprintf("message %s published while its partition had %d holders, want 1", m.ID, holders))
		}
	}
	return make([]error, len(msgs))
}

// TestPartitionsAreTakenOverAfterLeaseExpiry kills one of two replicas (no
// release, as a crash): the other takes its partitions once the leases
// expire, not before, and publishes the rows that wait there. "Not before"
// is read from the database's own records — the dead replica's lease expiry
// against the rows' published_at — rather than from a stopwatch, so a busy
// machine that delays heartbeats cannot fail it; the deadline of the wait
// bounds how long the takeover may take.
func TestPartitionsAreTakenOverAfterLeaseExpiry(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	const lease, heartbeat = 3 * time.Second, 100 * time.Millisecond
	cfg := outbox.Config{BatchSize: 50, Workers: 2, PollInterval: 10 * time.Millisecond}
	pcfg := partition.Config{LeaseDuration: lease, Heartbeat: heartbeat}
	pub := &partitionPublisher{}
	victim := startReplica(t, pool, cfg, pcfg, pub, true)
	survivor := startReplica(t, pool, cfg, pcfg, pub, false)
	// A settled split, half each: until then the first replica is still
	// handing its excess partitions over, and rows there are published
	// without any lease expiring.
	waitFor(t, 30*time.Second, "the replicas splitting the partitions", func() bool {
		o := owners(t, pool)
		return holds(o, victim.o.Owner()) == len(o)/2 && holds(o, survivor.o.Owner()) == len(o)/2
	})

	victim.stop() // leases not released
	// The dead replica heartbeats no more: its leases' expiry is final. The
	// partitions it still holds can only change hands once that has passed.
	var victimOwned []int
	var expired time.Time
	if err := pool.QueryRow(context.Background(),
		`SELECT array_agg(partition), max(expires_at) FROM outbox_leases WHERE owner = $1`,
		victim.o.Owner()).Scan(&victimOwned, &expired); err != nil {
		t.Fatalf("reading the dead replica's leases: %v", err)
	}
	if len(victimOwned) == 0 {
		t.Fatalf("the dead replica's partitions were taken over before the test could read them (lease %v)", lease)
	}
	// Rows in the dead replica's partitions, committed after it died.
	var ids []uuid.UUID
	for len(ids) < 50 {
		agg := uuid.New()
		if !slices.Contains(victimOwned, partition.Of(agg, 64)) {
			continue
		}
		id := uuid.New()
		if _, err := pool.Exec(context.Background(), `INSERT INTO outbox (id, type, aggregate_id, payload) VALUES ($1, 'payment.created', $2, '{}')`, id, agg); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	waitFor(t, 30*time.Second, "the survivor publishing the dead replica's rows", func() bool {
		return countStatus(t, pool, "PUBLISHED") == len(ids)
	})
	var first time.Time
	if err := pool.QueryRow(context.Background(),
		`SELECT min(published_at) FROM outbox WHERE id = ANY($1)`, ids).Scan(&first); err != nil {
		t.Fatal(err)
	}
	if first.Before(expired) {
		t.Errorf("a row of the dead replica's partitions was published at %v, before its leases expired at %v", first, expired)
	}
}

// TestStoppedReplicaReleasesItsPartitions: a replica that joins gets its
// share, and one stopped gracefully hands its partitions over, both long
// before the next heartbeat — the NOTIFY with the rebalance payload makes
// the others heartbeat at once — and long before any lease expires.
func TestStoppedReplicaReleasesItsPartitions(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	cfg := outbox.Config{BatchSize: 50, Workers: 2, PollInterval: 10 * time.Millisecond}
	pcfg := partition.Config{LeaseDuration: 2 * time.Minute, Heartbeat: 40 * time.Second}
	a := startReplica(t, pool, cfg, pcfg, &partitionPublisher{}, false)
	waitFor(t, 10*time.Second, "the first replica holding every partition", func() bool {
		return holds(owners(t, pool), a.o.Owner()) == 64
	})
	b := startReplica(t, pool, cfg, pcfg, &partitionPublisher{}, false)
	// A quarter of the heartbeat interval: splitting by then means the
	// rebalance was signalled, not found at the next heartbeat.
	waitFor(t, pcfg.Heartbeat/4, "the replicas splitting the partitions", func() bool {
		o := owners(t, pool)
		return holds(o, a.o.Owner()) == 32 && holds(o, b.o.Owner()) == 32
	})
	a.stop()
	waitFor(t, pcfg.Heartbeat/4, "the other replica holding every partition", func() bool {
		o := owners(t, pool)
		return holds(o, b.o.Owner()) == len(o)
	})
}

// ackLog records the order in which messages were acknowledged, per
// aggregate.
type ackLog struct {
	mu    sync.Mutex
	byAgg map[uuid.UUID][]uuid.UUID
}

func (l *ackLog) Publish(_ context.Context, msgs []outbox.Message) []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byAgg == nil {
		l.byAgg = map[uuid.UUID][]uuid.UUID{}
	}
	for _, m := range msgs {
		l.byAgg[m.AggregateID] = append(l.byAgg[m.AggregateID], m.ID)
	}
	return make([]error, len(msgs))
}

// TestChangingThePartitionCount changes the count from 64 to 16 while two
// ordered replicas publish and a writer commits: the new indexes replace the
// old ones, the replicas divide the 16 new partitions, and every aggregate's
// events are published once each, in order, across the switch.
func TestChangingThePartitionCount(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	store := outboxstore.New(pool)
	cfg := outbox.Config{BatchSize: 20, Workers: 2, PollInterval: 10 * time.Millisecond}
	pcfg := partition.Config{LeaseDuration: 2 * time.Second, Heartbeat: 50 * time.Millisecond}
	pub := &ackLog{}
	a := startReplica(t, pool, cfg, pcfg, pub, false)
	b := startReplica(t, pool, cfg, pcfg, pub, false)

	const aggregates, events = 30, 10
	want := map[uuid.UUID][]uuid.UUID{}
	aggs := make([]uuid.UUID, aggregates)
	for i := range aggs {
		aggs[i] = uuid.New()
	}
	written := make(chan struct{})
	halfway := make(chan struct{})
	go func() {
		defer close(written)
		for k := range events {
			if k == events/2 {
				close(halfway)
			}
			for _, agg := range aggs {
				id := uuid.New()
				want[agg] = append(want[agg], id)
				if _, err := pool.Exec(context.Background(), `INSERT INTO outbox (id, type, aggregate_id, payload) VALUES ($1, 'payment.refunded', $2, '{}')`, id, agg); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	<-halfway
	var steps []string
	if err := store.SetPartitions(context.Background(), 16, func(s string) { steps = append(steps, s) }); err != nil {
		t.Fatalf("SetPartitions: %v (steps %q)", err, steps)
	}
	<-written
	waitFor(t, time.Minute, "all rows PUBLISHED", func() bool { return countStatus(t, pool, "PUBLISHED") == aggregates*events })

	if n, err := store.Partitions(context.Background()); err != nil || n != 16 {
		t.Errorf("partition count: %d, %v; want 16", n, err)
	}
	var indexes []string
	rows, err := pool.Query(context.Background(), `SELECT indexname FROM pg_indexes WHERE tablename = 'outbox' AND indexname LIKE 'outbox_%_p%_idx' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		indexes = append(indexes, s)
	}
	if !slices.Equal(indexes, []string{"outbox_ordered_p16_idx", "outbox_pending_p16_idx"}) {
		t.Errorf("pending indexes after the change: %v, want those of 16 partitions only", indexes)
	}
	waitFor(t, 10*time.Second, "the replicas dividing the 16 partitions", func() bool {
		o := owners(t, pool)
		return len(o) == 16 && holds(o, a.o.Owner()) == 8 && holds(o, b.o.Owner()) == 8
	})

	pub.mu.Lock()
	defer pub.mu.Unlock()
	for _, agg := range aggs {
		if !slices.Equal(pub.byAgg[agg], want[agg]) {
			t.Errorf("aggregate %s: published %v, want once each in order %v", agg, pub.byAgg[agg], want[agg])
		}
	}
}
