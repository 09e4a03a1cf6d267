package paymentstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/payments/paymentstest"
	"github.com/payments-outbox/payments-outbox/domain/payment"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// TestNotifyingSignalsOnlyWritesThatCommittedRows: a write that committed
// outbox rows signals the Notifier once it returned; a replay (which writes
// nothing), a failed write and a write without messages do not.
func TestNotifyingSignalsOnlyWritesThatCommittedRows(t *testing.T) {
	n := NewNotifier(nil, logtest.Discard()) // never Run: the test reads what is pending
	repo := Notifying(paymentstest.NewFakeRepository(), n)
	ctx := context.Background()
	signalled := func() bool {
		select {
		case <-n.pending:
			return true
		default:
			return false
		}
	}
	newPayment := func() *payment.Payment {
		p, err := payment.New(payment.ID(uuid.NewString()), 1000, "BRL", "cus_1", "mer_1", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		p.PullEvents()
		return p
	}
	msg := func(p *payment.Payment) []outbox.Message {
		return []outbox.Message{{ID: uuid.Must(uuid.NewV7()), Type: payment.TypeCreated, AggregateID: uuid.MustParse(string(p.ID())), Payload: []byte(`{}`)}}
	}
	key := &idempotency.Key{Merchant: "mer_1", Key: "k", Fingerprint: "f"}

	p := newPayment()
	if _, err := repo.Create(ctx, p, msg(p), key); err != nil || !signalled() {
		t.Fatalf("a committed create: err %v; want nil and a signal", err)
	}
	q := newPayment()
	if c, err := repo.Create(ctx, q, msg(q), key); err != nil || !c.Replayed || signalled() {
		t.Errorf("a replayed create: replayed %t, err %v; want a replay and no signal", c.Replayed, err)
	}
	withMessage := func(p *payment.Payment) (payments.Change, error) {
		return payments.Change{Outbox: msg(p)}, nil
	}
	if _, err := repo.Update(ctx, p.ID(), nil, withMessage); err != nil || !signalled() {
		t.Errorf("a committed update: err %v; want nil and a signal", err)
	}
	failing := errors.New("refused")
	if _, err := repo.Update(ctx, p.ID(), nil, func(*payment.Payment) (payments.Change, error) {
		return payments.Change{}, failing
	}); !errors.Is(err, failing) || signalled() {
		t.Errorf("a failed update: err %v; want %v and no signal", err, failing)
	}
	if _, err := repo.Update(ctx, p.ID(), nil, func(*payment.Payment) (payments.Change, error) {
		return payments.Change{}, nil
	}); err != nil || signalled() {
		t.Errorf("an update without messages: err %v; want nil and no signal", err)
	}
}
