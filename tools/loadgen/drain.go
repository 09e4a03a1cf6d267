package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/relay"
)

// nullPublisher acknowledges every message without sending it anywhere,
// after an optional artificial latency per call. With no latency it measures
// what the relay itself costs (claim and mark in Postgres); with one, a
// broker that is the bottleneck, as SNS is in production. Never moto: its
// throughput says nothing about the relay's.
type nullPublisher struct{ latency time.Duration }

func (p nullPublisher) Publish(ctx context.Context, msgs []outbox.Message) []error {
	errs := make([]error, len(msgs))
	if p.latency > 0 {
		t := time.NewTimer(p.latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			for i := range errs { // never acknowledge what was not sent
				errs[i] = ctx.Err()
			}
		}
	}
	return errs
}

// drainPass is one drain of the backlog: the warm-up or the measured one.
type drainPass struct {
	latency time.Duration // of each Publish call
	target  int64         // rows to publish
	n       atomic.Int64  // rows published so far
	done    chan struct{} // closed once n reaches target
	once    sync.Once
}

func newDrainPass(target int, latency time.Duration) *drainPass {
	return &drainPass{latency: latency, target: int64(target), done: make(chan struct{})}
}

// passPublisher publishes with the latency of the current pass.
type passPublisher struct{ cur *atomic.Pointer[drainPass] }

func (p passPublisher) Publish(ctx context.Context, msgs []outbox.Message) []error {
	return nullPublisher{latency: p.cur.Load().latency}.Publish(ctx, msgs)
}

// countingStore passes claims through to the real store and counts, in the
// current pass, the rows claimed, published and committed.
type countingStore struct {
	relay.Store
	cur *atomic.Pointer[drainPass]
}

func (s countingStore) ClaimBatch(ctx context.Context, c relay.Claim, fn func([]outbox.Message) (relay.BatchResult, error)) (int, error) {
	p := s.cur.Load()
	n, err := s.Store.ClaimBatch(ctx, c, fn)
	if err == nil && p.n.Add(int64(n)) >= p.target {
		p.once.Do(func() { close(p.done) })
	}
	return n, err
}

// drainCase is one relay measurement.
type drainCase struct {
	Replicas int
	Notify   bool          // each replica LISTENs, as OUTBOX_NOTIFY=true does
	Latency  time.Duration // of each Publish call
	Backlog  int
	Relay    relay.Config
}

func (c drainCase) name() string {
	s := fmt.Sprintf("relay drain, %d replica(s), NOTIFY %s", c.Replicas, onOff(c.Notify))
	if c.Latency > 0 {
		s += fmt.Sprintf(", publisher %s/call", c.Latency)
	}
	if c.Relay.Ordered {
		s += ", ordered"
	}
	return s
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// fillBacklog replaces the outbox's content with n PENDING payment.created
// rows, each the row the service would commit for a new payment (newWrite).
// They are copied in with COPY, not written through paymentstore.Repository
// one transaction each: the backlog is the drain's starting point, not what
// it measures, and a hundred thousand transactions would make every drain
// case wait. Only outbox rows are written: the relay reads nothing else.
// TestRawWriteAndBacklogFitTheSchema copies a few into freshly migrated tables.
func fillBacklog(ctx context.Context, pool *pgxpool.Pool, n int) error {
	if _, err := pool.Exec(ctx, `TRUNCATE outbox`); err != nil {
		return fmt.Errorf("truncate outbox: %w", err)
	}
	now := time.Now()
	seq := 0
	rows := pgx.CopyFromFunc(func() ([]any, error) {
		if seq == n {
			return nil, nil // done
		}
		seq++
		w, err := newWrite(uint64(seq), now)
		if err != nil {
			return nil, err
		}
		return w.outboxRow(), nil
	})
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"outbox"}, []string{"id", "type", "aggregate_id", "payload"}, rows); err != nil {
		return fmt.Errorf("fill backlog: %w", err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE outbox`); err != nil {
		return fmt.Errorf("vacuum outbox: %w", err)
	}
	return nil
}

// settle lets the relays settle their leases before a measurement.
func settle(ctx context.Context, relays []*relay.Relay) error { return settleLeases(ctx, relays) }

// settleLeases heartbeats the relays in turn until each holds its fair share
// of the partitions, as replicas that have been running for a while do: the
// drain measures a settled deployment, not the first replica to start
// taking every partition and the others waiting a heartbeat for their share.
func settleLeases(ctx context.Context, relays []*relay.Relay) error {
	members := make([]string, len(relays))
	for i, r := range relays {
		members[i] = r.Owner()
	}
	for range 10 {
		settled := true
		for _, r := range relays {
			if err := r.Heartbeat(ctx); err != nil {
				return err
			}
			n, owned := r.Owned()
			settled = settled && len(owned) == relay.FairShare(n, members, r.Owner())
		}
		if settled {
			return nil
		}
	}
	return fmt.Errorf("%d relays did not settle their leases in 10 rounds", len(relays))
}

// drain starts c.Replicas relays, each with its own pool as a separate
// process would have, built from the project's own packages (relay.Relay on
// outboxstore.Store, outboxstore.Listen for NOTIFY), and times how long they
// take to publish the whole backlog.
//
// The relays drain the backlog twice: once to warm up, through a publisher
// with no latency, and once measured. A replica that has been running a
// while has connections whose Postgres backends have already touched the
// shared buffers; a fresh backend pays a page fault for each buffer page it
// first touches, which made eight fresh pools' rows cost the database twice
// what one pool's did (docs/BENCHMARKS.md, "Huge pages"). Measured
// cold, the drain priced the benchmark's start, not a deployment.
func drain(ctx context.Context, dbURL string, db *pgxpool.Pool, c drainCase, progress io.Writer) (summary, error) {
	log := slog.New(slog.NewTextHandler(progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
	workers := c.Relay.Workers
	if workers <= 0 {
		workers = 4 // relay.Config's default
	}
	var cur atomic.Pointer[drainPass]
	pools := make([]*pgxpool.Pool, 0, c.Replicas)
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	relays := make([]*relay.Relay, c.Replicas)
	for i := range relays {
		cfg, err := pgxpool.ParseConfig(dbURL)
		if err != nil {
			return summary{}, err
		}
		cfg.MaxConns = int32(workers + 2) // the workers, the listener, one spare
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return summary{}, err
		}
		pools = append(pools, pool)
		relays[i] = relay.New(countingStore{Store: outboxstore.New(pool), cur: &cur}, passPublisher{cur: &cur}, log, nil, time.Now, c.Relay)
	}
	// The listeners outlive both passes: each holds its connection for good,
	// as in a replica, so the measured pass runs on the warmed ones.
	lctx, stopListening := context.WithCancel(ctx)
	var listeners errgroup.Group
	defer func() {
		stopListening()
		_ = listeners.Wait()
	}()
	if c.Notify {
		for i, r := range relays {
			listeners.Go(func() error { return outboxstore.Listen(lctx, pools[i], log, r.Wake) })
		}
	}

	fmt.Fprintf(progress, "  %s: warming up\n", c.name())
	cur.Store(newDrainPass(c.Backlog, 0))
	if _, _, err := drainOnce(ctx, db, c, relays, cur.Load(), io.Discard); err != nil {
		return summary{}, fmt.Errorf("warm-up: %w", err)
	}

	cur.Store(newDrainPass(c.Backlog, c.Latency))
	before, elapsed, err := drainOnce(ctx, db, c, relays, cur.Load(), progress)
	if err != nil {
		return summary{}, err
	}
	stopListening()
	_ = listeners.Wait()
	for _, p := range pools {
		p.Close()
	}
	after, err := readCosts(ctx, db, true)
	if err != nil {
		return summary{}, err
	}
	n := cur.Load().n.Load()
	s := summary{N: int(n), Elapsed: elapsed,
		IndexReadsPerRow: float64(after.indexReads-before.indexReads) / float64(n),
		ClientCPU:        (after.self - before.self) / time.Duration(max(n, 1))}
	if after.postgresOK && before.postgresOK {
		s.ServerCPU = (after.postgres - before.postgres) / time.Duration(max(n, 1))
	}
	return s, nil
}

// drainOnce fills the backlog, lets the relays settle their leases, and runs
// them until they have published p.target rows; then stops them, checks that
// no row is left, and returns the cost counters read just before the start
// and how long the drain took.
func drainOnce(ctx context.Context, db *pgxpool.Pool, c drainCase, relays []*relay.Relay, p *drainPass, progress io.Writer) (costs, time.Duration, error) {
	if err := fillBacklog(ctx, db, c.Backlog); err != nil {
		return costs{}, 0, err
	}
	if err := settle(ctx, relays); err != nil {
		return costs{}, 0, err
	}
	before, err := readCosts(ctx, db, false)
	if err != nil {
		return costs{}, 0, err
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	g, gctx := errgroup.WithContext(rctx)
	start := time.Now()
	for _, r := range relays {
		g.Go(func() error { return r.Run(gctx) })
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	timeout := time.NewTimer(10 * time.Minute)
	defer timeout.Stop()
wait:
	for {
		select {
		case <-p.done:
			break wait
		case <-tick.C:
			n := p.n.Load()
			fmt.Fprintf(progress, "  %s: %4.0fs  %7d/%d rows  %7.0f rows/s\n",
				c.name(), time.Since(start).Seconds(), n, c.Backlog, float64(n)/time.Since(start).Seconds())
		case <-timeout.C:
			stop()
			_ = g.Wait()
			return costs{}, 0, fmt.Errorf("%s: backlog not drained after 10 minutes", c.name())
		case <-ctx.Done():
			return costs{}, 0, ctx.Err()
		}
	}
	elapsed := time.Since(start)
	stop()
	if err := g.Wait(); err != nil {
		return costs{}, 0, err
	}
	var left int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE status <> 'PUBLISHED'`).Scan(&left); err != nil {
		return costs{}, 0, err
	}
	if left != 0 {
		return costs{}, 0, fmt.Errorf("%s: %d rows not PUBLISHED after the drain", c.name(), left)
	}
	return before, elapsed, nil
}

// costs are the counters a drain's cost per row is computed from.
type costs struct {
	indexReads int64         // indexReads
	postgres   time.Duration // postgresCPU
	postgresOK bool
	self       time.Duration // selfCPU: the in-process relays'
}

// readCosts reads the counters; settle as for indexReads.
func readCosts(ctx context.Context, db *pgxpool.Pool, settle bool) (costs, error) {
	reads, err := indexReads(ctx, db, settle)
	if err != nil {
		return costs{}, err
	}
	pg, ok := postgresCPU(ctx, db)
	return costs{indexReads: reads, postgres: pg, postgresOK: ok, self: selfCPU()}, nil
}
