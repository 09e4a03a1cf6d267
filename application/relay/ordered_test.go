package relay_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/relay"
	"github.com/payments-outbox/payments-outbox/application/relay/relaytest"
)

// orderedPublisher records the order in which messages were acknowledged
// and fails those in fail.
type orderedPublisher struct {
	fail  map[uuid.UUID]error
	acked []uuid.UUID
}

func (p *orderedPublisher) Publish(_ context.Context, msgs []outbox.Message) []error {
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		if errs[i] = p.fail[m.ID]; errs[i] == nil {
			p.acked = append(p.acked, m.ID)
		}
	}
	return errs
}

func (p *orderedPublisher) index(id uuid.UUID) int {
	for i, a := range p.acked {
		if a == id {
			return i
		}
	}
	return -1
}

// TestOrderedFailureHoldsBackOnlyItsAggregate: in ordered mode a row the
// broker refuses holds back the rows of its own aggregate behind it, until
// its retry succeeds; the other aggregates' rows go on meanwhile, each in
// order.
func TestOrderedFailureHoldsBackOnlyItsAggregate(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := relaytest.NewFakeStore(clk.now)
	x, y := uuid.New(), uuid.New()
	xs := store.AddFor(x, 3, "payment.refunded")
	ys := store.AddFor(y, 3, "payment.refunded")
	pub := &orderedPublisher{fail: map[uuid.UUID]error{xs[0]: errors.New("throttled")}}
	r := relay.New(store, pub, discard(), nil, clk.now,
		relay.Config{BatchSize: 10, Ordered: true, BackoffBase: time.Minute, BackoffMax: time.Minute})

	for range 5 { // more steps than y needs: x must still wait
		if _, err := r.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ys {
		if store.Row(id).Status != "PUBLISHED" {
			t.Errorf("y's row %s is %s: another aggregate's failure held it back", id, store.Row(id).Status)
		}
	}
	for _, id := range xs[1:] {
		if st := store.Row(id).Status; st != "PENDING" || pub.index(id) >= 0 {
			t.Errorf("x's row %s is %s: it went ahead of x's failed first row", id, st)
		}
	}

	delete(pub.fail, xs[0]) // the broker is back; the retry is due after the backoff
	clk.advance(time.Minute)
	for range 4 {
		if _, err := r.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range ys[1:] {
		if pub.index(ys[i]) > pub.index(ys[i+1]) {
			t.Errorf("y's rows %d and %d acknowledged out of order", i, i+1)
		}
	}
	for i, id := range xs {
		if store.Row(id).Status != "PUBLISHED" {
			t.Fatalf("x's row %d is %s after the retry, want PUBLISHED", i, store.Row(id).Status)
		}
		if i > 0 && pub.index(xs[i-1]) > pub.index(id) {
			t.Errorf("x's rows %d and %d acknowledged out of order", i-1, i)
		}
	}
}

// TestOrderedDeadRowLetsItsAggregateGoOn: a row that goes DEAD stops holding
// back its aggregate; the rows behind it are published, so the DEAD event
// is missing from the stream, and when an operator requeues it, it arrives
// after them (late, out of its place).
func TestOrderedDeadRowLetsItsAggregateGoOn(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := relaytest.NewFakeStore(clk.now)
	x := uuid.New()
	xs := store.AddFor(x, 3, "payment.refunded")
	pub := &orderedPublisher{fail: map[uuid.UUID]error{xs[0]: relay.Permanent(errors.New("too large"))}}
	r := relay.New(store, pub, discard(), nil, clk.now, relay.Config{BatchSize: 10, Ordered: true})
	for range 4 {
		if _, err := r.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if st := store.Row(xs[0]).Status; st != "DEAD" {
		t.Fatalf("refused row is %s, want DEAD", st)
	}
	for _, id := range xs[1:] {
		if st := store.Row(id).Status; st != "PUBLISHED" {
			t.Errorf("row %s behind the DEAD one is %s, want PUBLISHED", id, st)
		}
	}
	if pub.index(xs[1]) > pub.index(xs[2]) {
		t.Error("the rows behind the DEAD one went out of order")
	}
}
