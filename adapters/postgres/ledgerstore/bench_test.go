package ledgerstore_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// BenchmarkApply measures the consumer's handler called directly (no
// broker) against Postgres, in each inbox mode: sync, one message = one inbox
// insert plus one ledger posting in one transaction (Receive, sync mode); async,
// one message = the same checks and the inbox insert alone (Receive, async mode),
// which is what the async mode ACKs after. It reports messages/s at 1, 4 and 8
// concurrent workers; docs/BENCHMARKS.md records the figures.
//
//	go test -run '^$' -bench Apply -benchtime 20000x ./adapters/postgres/ledgerstore/
func BenchmarkApply(b *testing.B) {
	for _, mode := range []string{"sync", "async"} {
		for _, workers := range []int{1, 4, 8} {
			b.Run(fmt.Sprintf("mode=%s/workers=%d", mode, workers), func(b *testing.B) {
				store := benchStore(b, workers)
				svc := newBooks(b, store)
				handle, want := svc.Apply, inbox.Applied
				if mode == "async" {
					handle, want = svc.Record, inbox.Recorded
				}
				bodies := benchBodies(b.N)
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
							res, err := handle(ctx, bodies[i])
							if err != nil {
								return err
							}
							if res.Disposition != want {
								return fmt.Errorf("outcome %s", res.Disposition)
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
}

// BenchmarkProcessorDrain measures the inbox processor's drain rate: b.N
// messages are recorded first (untimed), then the clock runs while one
// processor with workers claim loops applies them all, in batches of 100.
//
//	go test -run '^$' -bench ProcessorDrain -benchtime 20000x ./adapters/postgres/ledgerstore/
func BenchmarkProcessorDrain(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			store := benchStore(b, workers+1)
			svc := newBooks(b, store)
			for _, body := range benchBodies(b.N) {
				if _, err := svc.Record(context.Background(), body); err != nil {
					b.Fatal(err)
				}
			}
			proc := newProcessor(b, store, nil, inbox.ProcessorConfig{Workers: workers, BatchSize: 100})
			b.ResetTimer()
			var g errgroup.Group
			for range workers {
				g.Go(func() error {
					for {
						n, err := proc.Step(context.Background())
						if err != nil || n == 0 {
							return err
						}
					}
				})
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			st, err := store.InboxStats(context.Background(), ledgers.AppliedTypes())
			if err != nil || st.Pending != 0 || st.Parked != 0 {
				b.Fatalf("after the drain: %+v, %v", st, err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// benchStore is a store on a fresh database with one connection per worker,
// as cmd/ledger sizes its pool.
func benchStore(b *testing.B, conns int) *ledgerstore.Store {
	pool, err := postgres.Open(context.Background(), pgtest.NewDatabase(b)+"&pool_max_conns="+strconv.Itoa(conns), postgres.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := postgres.Migrate(context.Background(), pool, ledgermigrations.FS); err != nil {
		b.Fatal(err)
	}
	return ledgerstore.New(pool)
}

func benchBodies(n int) [][]byte {
	bodies := make([][]byte, n)
	for i := range bodies {
		p := newPayment(int64(1+i), fmt.Sprintf("cus_%d", i%1000), fmt.Sprintf("mer_%d", i%50))
		bodies[i] = p.body()
	}
	return bodies
}

// BenchmarkOneMerchant measures what many postings on one merchant cost,
// against the same postings spread over 50 merchants: every posting
// updates its merchant's balance row in ledger_balances, so postings on one
// merchant wait for each other's commit (sync: one message's transaction;
// drain: a whole batch of the processor). path=sync is Receive in the sync mode from
// workers goroutines; path=drain is the inbox processor with workers claim
// loops, the backlog recorded first (untimed). docs/BENCHMARKS.md records
// the figures.
//
//	go test -run '^$' -bench OneMerchant -benchtime 5000x ./adapters/postgres/ledgerstore/
func BenchmarkOneMerchant(b *testing.B) {
	for _, path := range []string{"sync", "drain"} {
		for _, merchants := range []int{50, 1} {
			for _, workers := range []int{1, 4, 8} {
				b.Run(fmt.Sprintf("path=%s/merchants=%d/workers=%d", path, merchants, workers), func(b *testing.B) {
					bodies := make([][]byte, b.N)
					for i := range bodies {
						bodies[i] = newPayment(int64(1+i), fmt.Sprintf("cus_%d", i%1000), fmt.Sprintf("mer_%d", i%merchants)).body()
					}
					store := benchStore(b, workers+1)
					svc := newBooks(b, store)
					if path == "sync" {
						groups := make([][][]byte, len(bodies))
						for i, body := range bodies {
							groups[i] = [][]byte{body}
						}
						benchSync(b, svc, groups, workers)
					} else {
						benchDrain(b, svc, store, bodies, workers)
					}
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
				})
			}
		}
	}
}

// benchSync receives each group of bodies in the sync mode, in order, from
// workers goroutines that take whole groups: a payment's messages in the
// order a FIFO queue would deliver them.
func benchSync(b *testing.B, svc books, groups [][][]byte, workers int) {
	var next atomic.Int64
	b.ResetTimer()
	g, ctx := errgroup.WithContext(context.Background())
	for range workers {
		g.Go(func() error {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(groups) {
					return nil
				}
				for _, body := range groups[i] {
					res, err := svc.Apply(ctx, body)
					if err != nil {
						return err
					}
					if res.Disposition != inbox.Applied {
						return fmt.Errorf("outcome %s", res.Disposition)
					}
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

func benchDrain(b *testing.B, svc books, store *ledgerstore.Store, bodies [][]byte, workers int) {
	for _, body := range bodies {
		if _, err := svc.Record(context.Background(), body); err != nil {
			b.Fatal(err)
		}
	}
	proc := newProcessor(b, store, nil, inbox.ProcessorConfig{Workers: workers, BatchSize: 100})
	b.ResetTimer()
	var g errgroup.Group
	for range workers {
		g.Go(func() error {
			for {
				n, err := proc.Step(context.Background())
				if err != nil || n == 0 {
					return err
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	st, err := store.InboxStats(context.Background(), ledgers.AppliedTypes())
	if err != nil || st.Pending != 0 || st.Parked != 0 {
		b.Fatalf("after the drain: %+v, %v", st, err)
	}
}
