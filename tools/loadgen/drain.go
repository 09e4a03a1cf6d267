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
	"github.com/payments-outbox/payments-outbox/application/relay"
)

// nullPublisher acknowledges every message without sending it anywhere,
// after an optional artificial latency per call. With no latency it measures
// what the relay itself costs (claim and mark in Postgres); with one, a
// broker that is the bottleneck, as SNS is in production. Never moto: its
// throughput says nothing about the relay's.
type nullPublisher struct{ latency time.Duration }

func (p nullPublisher) Publish(ctx context.Context, msgs []relay.Message) []error {
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

// countingStore passes claims through to the real store and closes done once
// target rows were claimed, published and committed.
type countingStore struct {
	relay.Store
	n      *atomic.Int64
	target int64
	done   chan struct{}
	once   *sync.Once
}

func (s countingStore) ClaimBatch(ctx context.Context, c relay.Claim, fn func([]relay.Message) (relay.Outcome, error)) (int, error) {
	n, err := s.Store.ClaimBatch(ctx, c, fn)
	if err == nil && s.n.Add(int64(n)) >= s.target {
		s.once.Do(func() { close(s.done) })
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
func drain(ctx context.Context, dbURL string, db *pgxpool.Pool, c drainCase, progress io.Writer) (summary, error) {
	if err := fillBacklog(ctx, db, c.Backlog); err != nil {
		return summary{}, err
	}
	log := slog.New(slog.NewTextHandler(progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var (
		published atomic.Int64
		done      = make(chan struct{})
		once      sync.Once
	)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	g, gctx := errgroup.WithContext(rctx)
	workers := c.Relay.Workers
	if workers <= 0 {
		workers = 4 // relay.Config's default
	}
	var pools []*pgxpool.Pool
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
		store := countingStore{Store: outboxstore.New(pool), n: &published, target: int64(c.Backlog), done: done, once: &once}
		relays[i] = relay.New(c.Relay, store, nullPublisher{latency: c.Latency}, log, nil, time.Now)
	}
	if err := settle(ctx, relays); err != nil {
		return summary{}, err
	}
	readsBefore, err := indexReads(ctx, db, false)
	if err != nil {
		return summary{}, err
	}
	pgBefore, pgOK := postgresCPU(ctx, db)
	selfBefore := selfCPU()
	start := time.Now()
	for i, r := range relays {
		g.Go(func() error { return r.Run(gctx) })
		if c.Notify {
			g.Go(func() error { return outboxstore.Listen(gctx, pools[i], log, r.Wake) })
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	timeout := time.NewTimer(10 * time.Minute)
	defer timeout.Stop()
wait:
	for {
		select {
		case <-done:
			break wait
		case <-tick.C:
			n := published.Load()
			fmt.Fprintf(progress, "  %s: %4.0fs  %7d/%d rows  %7.0f rows/s\n",
				c.name(), time.Since(start).Seconds(), n, c.Backlog, float64(n)/time.Since(start).Seconds())
		case <-timeout.C:
			stop()
			_ = g.Wait()
			return summary{}, fmt.Errorf("%s: backlog not drained after 10 minutes", c.name())
		case <-ctx.Done():
			return summary{}, ctx.Err()
		}
	}
	elapsed := time.Since(start)
	stop()
	if err := g.Wait(); err != nil {
		return summary{}, err
	}
	var left int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE status <> 'PUBLISHED'`).Scan(&left); err != nil {
		return summary{}, err
	}
	if left != 0 {
		return summary{}, fmt.Errorf("%s: %d rows not PUBLISHED after the drain", c.name(), left)
	}
	for _, p := range pools {
		p.Close()
	}
	readsAfter, err := indexReads(ctx, db, true)
	if err != nil {
		return summary{}, err
	}
	n := published.Load()
	s := summary{N: int(n), Elapsed: elapsed,
		IndexReadsPerRow: float64(readsAfter-readsBefore) / float64(n),
		ClientCPU:        (selfCPU() - selfBefore) / time.Duration(max(n, 1))}
	if pgAfter, ok := postgresCPU(ctx, db); ok && pgOK {
		s.ServerCPU = (pgAfter - pgBefore) / time.Duration(max(n, 1))
	}
	return s, nil
}
