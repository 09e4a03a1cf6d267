package main

import (
	"context"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// TestAFanOutWakesTheDeliveryWorkers: the inbox processor, configured as
// serve configures it (processorConfig's OnApplied), wakes a delivery worker
// once a fan-out has committed. The workers' poll is an hour away here, so
// only that wake-up delivers.
func TestAFanOutWakesTheDeliveryWorkers(t *testing.T) {
	t.Parallel()
	st := newBenchStack(t, nil, func(c *webhooks.WorkerConfig) { c.PollInterval = time.Hour })
	merchants := st.endpoints(t, 1, "/hook")
	st.start(t)
	// Every worker claims once at start, then waits for a wake-up or its poll.
	for deadline := time.Now().Add(10 * time.Second); st.claims.claims.Load() < int64(st.cfg.DeliveryWorkers); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d delivery workers made their first claim within 10s", st.claims.claims.Load(), st.cfg.DeliveryWorkers)
		}
	}
	for _, e := range st.events(2, merchants) {
		res, err := st.receiver.Receive(context.Background(), e.body)
		if err != nil || res.Disposition != inbox.Recorded {
			t.Fatalf("receive: got %v, %v; want recorded", res.Disposition, err)
		}
		st.rcv.wait(t, []string{e.id}, 10*time.Second)
	}
}
