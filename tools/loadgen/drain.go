package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
	"github.com/payments-outbox/payments-outbox/application/outbox/turns"
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

// add counts n rows drained in the pass.
func (p *drainPass) add(n int) {
	if p.n.Add(int64(n)) >= p.target {
		p.once.Do(func() { close(p.done) })
	}
}

// passPublisher publishes with the latency of the current pass.
type passPublisher struct{ cur *atomic.Pointer[drainPass] }

func (p passPublisher) Publish(ctx context.Context, msgs []outbox.Message) []error {
	return nullPublisher{latency: p.cur.Load().latency}.Publish(ctx, msgs)
}

// countingStore passes claims through to the relay's store and counts, in
// the current pass, the rows claimed, published and committed.
type countingStore struct {
	outbox.Store
	cur *atomic.Pointer[drainPass]
}

func (s countingStore) Claim(ctx context.Context, limit int, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	p := s.cur.Load()
	n, err := s.Store.Claim(ctx, limit, publish)
	if err == nil {
		p.add(n)
	}
	return n, err
}

// The relays a drain case runs: the default path, the same without its
// turns, ordered mode, and no relay at all but the relay's SQL sent by
// plain pgx loops (the drain ceiling).
const (
	modeDefault = "default"  // outbox.Relay on turns.NewLimiter(Turns) over outboxstore: cmd/payments unordered
	modeNoTurns = "no turns" // outbox.Relay straight on outboxstore: the article's loop, every worker at the database at once
	modeOrdered = "ordered"  // outbox.Relay on partition.Ordered: cmd/payments with OUTBOX_ORDERING=partition
	modeCeiling = "ceiling"  // ceilingSQL from Replicas×Workers connections, no relay code
)

// drainCase is one relay measurement.
type drainCase struct {
	Mode     string
	Replicas int
	Workers  int           // claim loops per replica (connections of the ceiling)
	Notify   bool          // each replica LISTENs, as OUTBOX_NOTIFY=true does
	Latency  time.Duration // of each Publish call
	Backlog  int
	// Turns is the default path's claims at work in the database per
	// replica; ActiveClaims ordered mode's, shared by the replicas.
	Turns, ActiveClaims int
}

func (c drainCase) name() string {
	if c.Mode == modeCeiling {
		return fmt.Sprintf("drain ceiling: the relay's claim and mark, plain pgx, %d connection(s)", c.Workers)
	}
	s := fmt.Sprintf("relay drain, %s, %d replica(s)", c.Mode, c.Replicas)
	if c.Latency > 0 {
		s += fmt.Sprintf(", publisher %s/call", c.Latency)
	}
	if !c.Notify {
		s += ", NOTIFY off"
	}
	return s
}

// ceilingClaimSQL and ceilingMarkSQL are the statements the default relay
// sends for a batch (outboxstore's claimDueSQL and markPublishedSQL),
// written out here so that the drain ceiling runs them without any of the
// relay's code. TestDrainCeilingSendsTheRelaysStatements checks, in
// pg_stat_statements, that the relay sends these very texts.
const (
	ceilingClaimSQL = `
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, true
FROM outbox
WHERE status = 'PENDING' AND next_attempt_at <= now()
ORDER BY next_attempt_at, created_at
LIMIT $1
FOR UPDATE SKIP LOCKED`
	ceilingMarkSQL = `
UPDATE outbox SET status = 'PUBLISHED', published_at = $2
WHERE id = ANY($1) AND status = 'PENDING'`
)

// ceilingLoop drains with the relay's two round trips per batch — BEGIN and
// the claim in one pipeline, the mark and COMMIT in another — from one
// connection of pool, until the pass is done or nothing is left.
func ceilingLoop(ctx context.Context, pool *pgxpool.Pool, batch int, p *drainPass) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	// Scanned into the same variables every row: the ceiling keeps nothing.
	var (
		id, agg              pgtype.UUID
		typ, tparent, tstate string
		payload              []byte
		attempts             int
		created              time.Time
		due                  bool
		scan                 = []any{&id, &agg, &typ, &payload, &attempts, &created, &tparent, &tstate, &due}
		beginClaim           pgx.Batch
		markCommit           pgx.Batch
	)
	ids := make([]pgtype.UUID, 0, batch)
	beginClaim.Queue("BEGIN")
	beginClaim.Queue(ceilingClaimSQL, batch)
	for ctx.Err() == nil {
		select {
		case <-p.done:
			return nil
		default:
		}
		br := conn.SendBatch(ctx, &beginClaim)
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
		rows, err := br.Query()
		if err != nil {
			br.Close()
			return err
		}
		ids = ids[:0]
		if _, err := pgx.ForEachRow(rows, scan, func() error { ids = append(ids, id); return nil }); err != nil {
			br.Close()
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		markCommit.QueuedQueries = markCommit.QueuedQueries[:0]
		if len(ids) > 0 {
			markCommit.Queue(ceilingMarkSQL, ids, time.Now())
		}
		markCommit.Queue("COMMIT")
		if err := conn.SendBatch(ctx, &markCommit).Close(); err != nil {
			return err
		}
		p.add(len(ids))
		if len(ids) == 0 {
			return nil
		}
	}
	return ctx.Err()
}

// fillBacklog replaces the outbox's content with n PENDING payment.created
// rows, each the row the service would commit for a new payment (newWrite),
// committed a microsecond apart, oldest first, as a burst of writes leaves
// them. They are copied in with COPY, not written through
// paymentstore.Repository one transaction each: the backlog is the drain's
// starting point, not what it measures, and a hundred thousand transactions
// would make every drain case wait. Only outbox rows are written: the relay
// reads nothing else. TestRawWriteAndBacklogFitTheSchema copies a few into
// freshly migrated tables.
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
		committed := now.Add(time.Duration(seq-n) * time.Microsecond)
		w, err := newWrite(uint64(seq), committed)
		if err != nil {
			return nil, err
		}
		return append(w.outboxRow(), committed, committed), nil
	})
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"outbox"}, []string{"id", "type", "aggregate_id", "payload", "created_at", "next_attempt_at"}, rows); err != nil {
		return fmt.Errorf("fill backlog: %w", err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE outbox`); err != nil {
		return fmt.Errorf("vacuum outbox: %w", err)
	}
	return nil
}

// settleLeases heartbeats the ordered replicas in turn until each holds its
// fair share of the partitions, as replicas that have been running for a
// while do: the drain measures a settled deployment, not the first replica
// to start taking every partition and the others waiting a heartbeat for
// their share.
func settleLeases(ctx context.Context, ordered []*partition.Ordered) error {
	members := make([]string, len(ordered))
	for i, o := range ordered {
		members[i] = o.Owner()
	}
	for range 10 {
		settled := true
		for _, o := range ordered {
			if err := o.Heartbeat(ctx); err != nil {
				return err
			}
			n, owned := o.Owned()
			settled = settled && len(owned) == partition.FairShare(n, members, o.Owner())
		}
		if settled {
			return nil
		}
	}
	return fmt.Errorf("%d relays did not settle their leases in 10 rounds", len(ordered))
}

// replicaSet is the relays of one drain case, each with its own pool as a
// separate process would have, built from the project's own packages as
// cmd/payments builds them; or, for the ceiling, the pool its loops use.
// The pools outlive the passes; the relays are built anew for each pass (a
// stopped partition.Ordered has released its leases).
type replicaSet struct {
	c       drainCase
	log     *slog.Logger
	pools   []*pgxpool.Pool
	mu      sync.Mutex // the listeners read relays while the next pass builds them
	relays  []*outbox.Relay
	ordered []*partition.Ordered
}

func newReplicaSet(ctx context.Context, dbURL string, c drainCase, log *slog.Logger) (*replicaSet, error) {
	rs := &replicaSet{c: c, log: log}
	replicas, conns := c.Replicas, c.Workers+2 // the workers, the listener, one spare
	if c.Mode == modeCeiling {
		replicas, conns = 1, c.Workers
	}
	for range replicas {
		cfg, err := pgxpool.ParseConfig(dbURL)
		if err != nil {
			rs.close()
			return nil, err
		}
		cfg.MaxConns = int32(conns)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			rs.close()
			return nil, err
		}
		rs.pools = append(rs.pools, pool)
	}
	return rs, nil
}

// build makes the relays of a pass, counting into cur.
func (rs *replicaSet) build(cur *atomic.Pointer[drainPass]) error {
	c := rs.c
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.relays, rs.ordered = nil, nil
	if c.Mode == modeCeiling {
		return nil
	}
	for _, pool := range rs.pools {
		table := outboxstore.New(pool)
		var store outbox.Store
		switch c.Mode {
		case modeDefault:
			store = turns.NewLimiter(c.Turns).Store(table)
		case modeNoTurns:
			store = table
		case modeOrdered:
			o := partition.NewOrdered(table, rs.log, nil, partition.Config{ActiveClaims: c.ActiveClaims})
			rs.ordered = append(rs.ordered, o)
			store = o
		default:
			return fmt.Errorf("unknown relay mode %q", c.Mode)
		}
		rs.relays = append(rs.relays, outbox.NewRelay(countingStore{Store: store, cur: cur}, passPublisher{cur: cur}, rs.log, nil, time.Now,
			outbox.Config{Workers: c.Workers}))
	}
	return nil
}

// wake wakes relay i (a NOTIFY arrived on its listener).
func (rs *replicaSet) wake(i int) func() {
	return func() {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		if i < len(rs.relays) {
			rs.relays[i].Wake()
		}
	}
}

func (rs *replicaSet) close() {
	for _, p := range rs.pools {
		p.Close()
	}
}

// drain times how long c's relays take to publish the whole backlog.
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
	var cur atomic.Pointer[drainPass]
	cur.Store(newDrainPass(c.Backlog, 0))
	rs, err := newReplicaSet(ctx, dbURL, c, log)
	if err != nil {
		return summary{}, err
	}
	defer rs.close()
	if err := rs.build(&cur); err != nil {
		return summary{}, err
	}
	// The listeners outlive both passes: each holds its connection for good,
	// as in a replica, so the measured pass runs on the warmed ones.
	lctx, stopListening := context.WithCancel(ctx)
	var listeners errgroup.Group
	defer func() {
		stopListening()
		_ = listeners.Wait()
	}()
	if c.Notify && c.Mode != modeCeiling {
		for i := range rs.pools {
			listeners.Go(func() error { return outboxstore.Listen(lctx, rs.pools[i], log, rs.wake(i)) })
		}
	}

	fmt.Fprintf(progress, "  %s: warming up\n", c.name())
	if _, _, err := drainOnce(ctx, db, rs, cur.Load(), io.Discard); err != nil {
		return summary{}, fmt.Errorf("warm-up: %w", err)
	}

	cur.Store(newDrainPass(c.Backlog, c.Latency))
	if err := rs.build(&cur); err != nil {
		return summary{}, err
	}
	before, elapsed, err := drainOnce(ctx, db, rs, cur.Load(), progress)
	if err != nil {
		return summary{}, err
	}
	stopListening()
	_ = listeners.Wait()
	rs.close()
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

// drainOnce fills the backlog, lets ordered relays settle their leases, and
// runs the relays (or the ceiling's loops) until they have published
// p.target rows; then stops them, checks that no row is left, and returns
// the cost counters read just before the start and how long the drain took.
func drainOnce(ctx context.Context, db *pgxpool.Pool, rs *replicaSet, p *drainPass, progress io.Writer) (costs, time.Duration, error) {
	c := rs.c
	if err := fillBacklog(ctx, db, c.Backlog); err != nil {
		return costs{}, 0, err
	}
	if err := settleLeases(ctx, rs.ordered); err != nil {
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
	if c.Mode == modeCeiling {
		for range c.Workers {
			g.Go(func() error { return ceilingLoop(gctx, rs.pools[0], 100, p) })
		}
	}
	for _, r := range rs.relays {
		g.Go(func() error { return r.Run(gctx) })
	}
	for _, o := range rs.ordered {
		// Leases kept alive during a long drain; released at its end,
		// settled again before the next.
		g.Go(func() error { return o.Run(gctx) })
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
		case <-gctx.Done(): // a loop failed
			return costs{}, 0, fmt.Errorf("%s: %w", c.name(), g.Wait())
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
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
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
