package sqs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// BenchmarkConsumerThroughBroker measures end-to-end consumer throughput
// against the configured SQS endpoint, in each inbox mode: b.N messages are
// queued first, then the clock runs from starting the consumer until all of
// them are applied (sync) or recorded (async) and deleted. With moto the
// broker, not the ledger, is the bottleneck.
//
//	go test -run '^$' -bench ConsumerThroughBroker -benchtime 500x ./adapters/sqs/
func BenchmarkConsumerThroughBroker(b *testing.B) {
	for _, mode := range []string{"sync", "async"} {
		for _, workers := range []int{4, 8} {
			b.Run(fmt.Sprintf("mode=%s/workers=%d", mode, workers), func(b *testing.B) {
				tq := awstest.NewTopicQueue(b, awstest.QueueConfig{})
				pool := pgtest.New(b, ledgermigrations.FS)
				store := ledgerstore.New(pool)
				reg := prometheus.NewRegistry()
				m := sqs.NewMetrics(reg, "ledger")
				bodies := make([][]byte, b.N)
				for i := range bodies {
					bodies[i] = newPayment(int64(1+i), "cus_b", "mer_b").body()
				}
				sendB(b, tq, bodies)
				svc := newBooks(b, store)
				var h sqs.Handler = svc.sync
				outcome := "applied"
				if mode == "async" {
					h, outcome = svc.async, "recorded"
				}
				c := sqs.NewConsumer(tq.SQS, h, tq.QueueURL, logtest.Discard(), m, time.Now, sqs.Config{
					Workers: workers, WaitTime: time.Second,
				})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				b.ResetTimer()
				go func() { done <- c.Run(ctx) }()
				deadline := time.Now().Add(5 * time.Minute)
				for metricValue(b, reg, "ledger_messages_processed_total", "outcome", outcome) < float64(b.N) {
					if time.Now().After(deadline) {
						b.Fatal("timed out")
					}
					time.Sleep(10 * time.Millisecond)
				}
				b.StopTimer()
				cancel()
				<-done
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}

func sendB(b *testing.B, tq *awstest.TopicQueue, bodies [][]byte) {
	for len(bodies) > 0 {
		n := min(10, len(bodies))
		if err := sendBatch(tq, bodies[:n]); err != nil {
			b.Fatal(err)
		}
		bodies = bodies[n:]
	}
}
