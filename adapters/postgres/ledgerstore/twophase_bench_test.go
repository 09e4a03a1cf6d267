package ledgerstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/application/inbox"
)

// BenchmarkTwoPhase measures the ledger's cost of a two-phase payment — a
// payment.authorized that places a hold, then a payment.captured that posts
// and releases it — against a one-phase payment.created, received in the
// sync mode by workers goroutines, spread over 50 merchants or all on one.
// Each worker takes whole payments, its authorization before its capture,
// as a FIFO queue would deliver them. b.N counts payments, not messages.
//
//	go test -run '^$' -bench TwoPhase -benchtime 3000x ./adapters/postgres/ledgerstore/
func BenchmarkTwoPhase(b *testing.B) {
	for _, phases := range []int{1, 2} {
		for _, merchants := range []int{50, 1} {
			for _, workers := range []int{1, 4} {
				b.Run(fmt.Sprintf("phases=%d/merchants=%d/workers=%d", phases, merchants, workers), func(b *testing.B) {
					payments := make([][][]byte, b.N)
					for i := range payments {
						p := newPayment(int64(1+i), fmt.Sprintf("cus_%d", i%1000), fmt.Sprintf("mer_%d", i%merchants))
						if phases == 1 {
							payments[i] = [][]byte{p.body()}
						} else {
							payments[i] = [][]byte{p.authorization().body(), p.capture(p.amount).body()}
						}
					}
					svc := newBooks(b, benchStore(b, workers+1))
					var next atomic.Int64
					b.ResetTimer()
					g, ctx := errgroup.WithContext(context.Background())
					for range workers {
						g.Go(func() error {
							for {
								i := int(next.Add(1)) - 1
								if i >= len(payments) {
									return nil
								}
								for _, body := range payments[i] {
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
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "payments/s")
				})
			}
		}
	}
}
