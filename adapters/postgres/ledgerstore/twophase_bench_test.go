package ledgerstore_test

import (
	"fmt"
	"testing"
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
					benchSync(b, newBooks(b, benchStore(b, workers+1)), payments, workers)
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "payments/s")
				})
			}
		}
	}
}
