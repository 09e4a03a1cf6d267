package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/turns"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// lagRecorder is relay metrics that keep each message's time from commit to
// acknowledgement; the rest it ignores.
type lagRecorder struct {
	mu  sync.Mutex
	on  bool
	lag []time.Duration
}

func (l *lagRecorder) Published(d time.Duration) {
	l.mu.Lock()
	if l.on {
		l.lag = append(l.lag, d)
	}
	l.mu.Unlock()
}
func (l *lagRecorder) record(on bool)          { l.mu.Lock(); l.on = on; l.mu.Unlock() }
func (*lagRecorder) PublishCall(time.Duration) {}
func (*lagRecorder) PublishFailed()            {}
func (*lagRecorder) Dead()                     {}
func (*lagRecorder) Backlog(outbox.Stats)      {}
func (*lagRecorder) BatchSize(int)             {}

// relayLag measures the steady state: a writer commits outbox rows at
// o.LagRate a second, one per transaction, signalling paymentstore.Notifier
// after each commit as the service does; the relays (each LISTENing, a null
// publisher) publish them. The figure is commit → acknowledgement, the
// outbox rows' created_at to the publish: what NOTIFY and the claim add.
func (b *bench) relayLag(ctx context.Context) error {
	o := b.o
	dbURL, err := b.createDatabase(ctx, "lag", paymentsmigrations.FS)
	if err != nil {
		return err
	}
	for _, n := range o.LagReplicas {
		var runs []summary
		for range o.Runs {
			fmt.Fprintf(b.progress, "loadgen: relay lag, %d replica(s), %.0f rows/s for %s\n", n, o.LagRate, o.Duration)
			s, err := lag(ctx, dbURL, n, o, b.progress)
			if err != nil {
				return err
			}
			runs = append(runs, s)
		}
		slices.SortFunc(runs, func(a, b summary) int { return int(a.P50 - b.P50) })
		med := runs[len(runs)/2]
		b.rows = append(b.rows, row{
			Scenario: fmt.Sprintf("relay lag, %d replica(s), NOTIFY on, %.0f rows/s", n, o.LagRate),
			Conc:     fmt.Sprintf("%d×4 workers", n),
			Rate:     rateSpread(runs), Unit: "rows/s",
			P50: med.P50, P95: med.P95, P99: med.P99,
			Limit: "commit → publish (null publisher); median run by p50",
		})
	}
	return nil
}

func lag(ctx context.Context, dbURL string, replicas int, o options, progress interface{ Write([]byte) (int, error) }) (summary, error) {
	log := slog.New(slog.NewTextHandler(progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
	writer, err := openPool(ctx, dbURL, 4)
	if err != nil {
		return summary{}, err
	}
	defer writer.Close()
	if _, err := writer.Exec(ctx, `TRUNCATE outbox`); err != nil {
		return summary{}, err
	}
	rec := &lagRecorder{}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	g, gctx := errgroup.WithContext(rctx)
	var pools []*pgxpool.Pool
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	relays := make([]*outbox.Relay, replicas)
	for i := range relays {
		pool, err := openPool(ctx, dbURL, 6)
		if err != nil {
			return summary{}, err
		}
		pools = append(pools, pool)
		// The default path, as cmd/payments builds it.
		relays[i] = outbox.NewRelay(turns.NewLimiter(o.Turns).Store(outboxstore.New(pool)), nullPublisher{}, log, rec, time.Now,
			outbox.Config{Workers: o.RelayWorkers})
	}
	for i, r := range relays {
		g.Go(func() error { return r.Run(gctx) })
		g.Go(func() error { return outboxstore.Listen(gctx, pools[i], log, r.Wake) })
	}
	notifier := paymentstore.NewNotifier(writer, log)
	g.Go(func() error { return notifier.Run(gctx) })

	// Warm up, then record for o.Duration, at a fixed schedule: a slow insert
	// makes the next ones catch up rather than lowering the rate.
	interval := time.Duration(float64(time.Second) / o.LagRate)
	start := time.Now()
	warm, end := start.Add(o.Warmup), start.Add(o.Warmup+o.Duration)
	var seq uint64
	recording := false
	for next := start; time.Now().Before(end); next = next.Add(interval) {
		if d := time.Until(next); d > 0 {
			time.Sleep(d) // pacing the writer, not synchronising
		}
		if !recording && time.Now().After(warm) {
			rec.record(true)
			recording = true
		}
		seq++
		w, err := newWrite(seq, time.Now())
		if err != nil {
			return summary{}, err
		}
		if _, err := writer.Exec(ctx, `INSERT INTO outbox (id, type, aggregate_id, payload) VALUES ($1, $2, $3, $4)`, w.outboxRow()...); err != nil {
			return summary{}, err
		}
		notifier.Signal()
	}
	rec.record(false)
	stop()
	if err := g.Wait(); err != nil {
		return summary{}, err
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return summarize(rec.lag, 0, o.Duration), nil
}
