package ledgerstore_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/posting"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// BenchmarkApply measures the consumer's handler called directly (no
// broker) against Postgres: one message = one inbox insert plus one ledger
// posting in one transaction. It reports messages/s at 4 and 8 concurrent
// workers; docs/BENCHMARKS.md records the figures.
//
//	go test -run '^$' -bench Apply -benchtime 20000x ./adapters/postgres/ledgerstore/
func BenchmarkApply(b *testing.B) {
	for _, workers := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			// One connection per worker, as cmd/ledger sizes its pool.
			pool, err := postgres.Open(context.Background(), pgtest.NewDatabase(b)+"&pool_max_conns="+strconv.Itoa(workers))
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			if _, err := postgres.Migrate(context.Background(), pool, ledgermigrations.FS); err != nil {
				b.Fatal(err)
			}
			store := ledgerstore.New(pool)
			svc := posting.NewService(store, store, schemas(b), time.Now)
			bodies := make([][]byte, b.N)
			for i := range bodies {
				p := newPayment(int64(1+i), fmt.Sprintf("cus_%d", i%1000), fmt.Sprintf("mer_%d", i%50))
				bodies[i] = p.body()
			}
			var next atomic.Int64
			b.ResetTimer()
			g, ctx := errgroup.WithContext(context.Background())
			for range workers {
				g.Go(func() error {
					for {
						i := int(next.Add(1)) - 1
						if i >= len(bodies) {
							return nil
						}
						res, err := svc.Apply(ctx, bodies[i])
						if err != nil {
							return err
						}
						if res.Outcome != posting.Applied {
							return fmt.Errorf("outcome %s", res.Outcome)
						}
					}
				})
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
