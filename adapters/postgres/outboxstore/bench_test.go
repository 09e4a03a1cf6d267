package outboxstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// nullPublisher acknowledges everything at once: with it the benchmark measures
// the relay's own cost, claim and mark, which is what bounds a replica's drain
// rate before the broker does.
type nullPublisher struct{}

func (nullPublisher) Publish(_ context.Context, msgs []outbox.Message) []error {
	return make([]error, len(msgs))
}

// BenchmarkDrain measures how fast one relay replica drains a backlog of b.N
// PENDING rows with a null publisher, for several batch sizes and worker counts.
// The rows are inserted before the timer starts; the figure to read is rows/s.
//
//	go test -run '^$' -bench Drain -benchtime 200000x ./adapters/postgres/outboxstore
func BenchmarkDrain(b *testing.B) {
	for _, bc := range []struct{ batch, workers int }{
		{100, 1}, {100, 2}, {100, 4}, {100, 8}, {500, 4}, {1000, 4},
	} {
		b.Run(fmt.Sprintf("batch=%d/workers=%d", bc.batch, bc.workers), func(b *testing.B) {
			benchmarkDrain(b, bc.batch, bc.workers)
		})
	}
}

func benchmarkDrain(b *testing.B, batch, workers int) {
	ctx := context.Background()
	admin := pgtest.New(b, paymentsmigrations.FS)
	cfg := admin.Config()
	cfg.MaxConns = int32(workers + 1)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	// Insert in chunks so a million-row backlog does not become one huge statement.
	for left := b.N; left > 0; left -= 100_000 {
		insertRows(b, admin, min(left, 100_000), "payment.created")
	}
	if _, err := admin.Exec(ctx, `VACUUM ANALYZE outbox`); err != nil {
		b.Fatal(err)
	}
	r := outbox.NewRelay(outboxstore.New(pool), nullPublisher{}, logtest.Discard(), nil, time.Now,
		outbox.Config{BatchSize: batch, Workers: 1})

	b.ResetTimer()
	start := time.Now()
	// Each goroutine is one relay worker: Step until nothing is left to claim.
	var g errgroup.Group
	for range workers {
		g.Go(func() error {
			for {
				n, err := r.Step(ctx)
				if err != nil || n == 0 {
					return err
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if got := countStatus(b, admin, "PUBLISHED"); got != b.N {
		b.Fatalf("got %d rows PUBLISHED, want %d", got, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rows/s")
}
