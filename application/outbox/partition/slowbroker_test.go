package partition_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition/partitiontest"
)

// lateBroker acknowledges at once the first fits messages of each call, in
// order, and the rest only after the call's deadline, too late: they get
// the context's error, as an SNS call cut off by its deadline does.
type lateBroker struct {
	orderedPublisher
	fits int
}

func (b *lateBroker) Publish(ctx context.Context, msgs []outbox.Message) []error {
	done := min(b.fits, len(msgs))
	errs := b.orderedPublisher.Publish(ctx, msgs[:done])
	errs = append(errs, make([]error, len(msgs)-done)...)
	if done == len(msgs) {
		return errs
	}
	<-ctx.Done()
	for i := done; i < len(msgs); i++ {
		errs[i] = ctx.Err()
	}
	return errs
}

// TestOrderedRelayOutlastsASlowBroker: in ordered mode too, a broker that
// answers only part of each batch within the deadline slows the relay
// without stopping it: what it acknowledged is marked, the rest retried,
// the batch shrinks, and every payment's events still go out in order,
// each once.
func TestOrderedRelayOutlastsASlowBroker(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := partitiontest.NewFakeStore(clk.now)
	var rows [][]uuid.UUID
	for range 8 {
		rows = append(rows, store.AddFor(uuid.New(), 3, "payment.refunded"))
	}
	b := &lateBroker{fits: 2}
	r := orderedRelay(store, b, clk, outbox.Config{BatchSize: 8, MaxAttempts: 100, PublishTimeout: 400 * time.Millisecond})

	for step := 0; store.Count("PUBLISHED") < 24; step++ {
		if step == 60 {
			t.Fatalf("%d of 24 rows PUBLISHED after %d steps; want all", store.Count("PUBLISHED"), step)
		}
		if n, err := r.Step(context.Background()); err == nil && n == 0 {
			clk.advance(time.Hour) // what is left waits out its backoff
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.acked) != 24 {
		t.Errorf("%d acknowledgements for 24 rows, want each once", len(b.acked))
	}
	for a, ids := range rows {
		for i := 1; i < len(ids); i++ {
			if slices.Index(b.acked, ids[i-1]) > slices.Index(b.acked, ids[i]) {
				t.Errorf("payment %d: events %d and %d acknowledged out of order", a, i-1, i)
			}
		}
	}
}
