package paymentstore_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/payments"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// TestEveryFieldSurvivesReplayAndRead: a retry with the same Idempotency-Key
// is answered from the stored result (storedResult, keys.go), and a read
// and a list from the payments row (get, repository.go; listSQL, list.go);
// each must give back every field of the payment (payment.Snapshot) and of
// the refund (payment.Refund) that the write committed. The fields are found by reflection, so a field
// added to the domain fails here until the stored result and the SQL carry
// it — and until the sample below sets it, since a field left at its zero
// value would pass however it is stored.
func TestEveryFieldSurvivesReplayAndRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	clock := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { // every write a second later, so updated_at differs from created_at
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Second)
		return clock
	}
	svc := payments.NewService(paymentstore.New(pgtest.New(t, paymentsmigrations.FS)), now,
		func() string { return uuid.Must(uuid.NewV7()).String() }, payments.Config{})

	// The sample: a payment that has every field set, through the use cases.
	create := payments.CreatePayment{Principal: platform, Amount: 1050, Currency: "BRL", PayerID: "cus_1", MerchantID: "mer_1",
		Description: "coffee", IdempotencyKey: "create-1"}
	created, err := svc.Create(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	refund := payments.RefundPayment{Principal: platform, PaymentID: created.Payment.ID(), Amount: 250, IdempotencyKey: "refund-1"}
	refunded, err := svc.Refund(ctx, refund)
	if err != nil {
		t.Fatal(err)
	}
	// The payment changes after the refund, so that a replay which read the
	// payment's row instead of the stored result would show.
	latest, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: created.Payment.ID(), Amount: 100})
	if err != nil {
		t.Fatal(err)
	}

	requireEveryFieldSet(t, "the refunded payment", refunded.Payment.Snapshot())
	requireEveryFieldSet(t, "the refund", *refunded.Refund)

	again, err := svc.Create(ctx, create)
	if err != nil || !again.Replayed {
		t.Fatalf("create retry: replayed=%v err=%v, want the replay", again.Replayed, err)
	}
	requireSameFields(t, "create replay: payment", created.Payment.Snapshot(), again.Payment.Snapshot())

	again, err = svc.Refund(ctx, refund)
	if err != nil || !again.Replayed || again.Refund == nil {
		t.Fatalf("refund retry: replayed=%v refund=%v err=%v, want the replay with its refund", again.Replayed, again.Refund, err)
	}
	requireSameFields(t, "refund replay: payment", refunded.Payment.Snapshot(), again.Payment.Snapshot())
	requireSameFields(t, "refund replay: refund", *refunded.Refund, *again.Refund)

	read, err := svc.Get(ctx, platform, created.Payment.ID())
	if err != nil {
		t.Fatal(err)
	}
	requireSameFields(t, "read", latest.Payment.Snapshot(), read.Snapshot())

	// A list reads the rows with a statement of its own (listSQL, list.go).
	listed, err := svc.List(ctx, payments.ListPayments{Principal: platform, MerchantID: "mer_1", Limit: 1})
	if err != nil || len(listed.Payments) != 1 {
		t.Fatalf("list: %v, %v; want the payment", listed, err)
	}
	requireSameFields(t, "list (listSQL, list.go)", latest.Payment.Snapshot(), listed.Payments[0].Snapshot())
}

// requireEveryFieldSet fails for each field of the struct v left at its
// zero value: the test could not tell such a field dropped from kept.
func requireEveryFieldSet(t *testing.T, what string, v any) {
	t.Helper()
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		if rv.Field(i).IsZero() {
			t.Errorf("%s leaves %s.%s at its zero value, so a replay or a read that drops it would pass: make the sample set it", what, rv.Type(), rv.Type().Field(i).Name)
		}
	}
}

// requireSameFields compares the structs want and got field by field,
// times by Equal, and names each field that differs.
func requireSameFields(t *testing.T, what string, want, got any) {
	t.Helper()
	w, g := reflect.ValueOf(want), reflect.ValueOf(got)
	for i := range w.NumField() {
		wf, gf := w.Field(i).Interface(), g.Field(i).Interface()
		same := reflect.DeepEqual(wf, gf)
		if wt, ok := wf.(time.Time); ok {
			same = wt.Equal(gf.(time.Time))
		}
		if !same {
			t.Errorf("%s: %s.%s = %v, want %v: the stored result (storedResult, keys.go) or the SQL (repository.go) does not carry it", what, w.Type(), w.Type().Field(i).Name, gf, wf)
		}
	}
}
