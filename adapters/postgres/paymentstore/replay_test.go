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
	"github.com/payments-outbox/payments-outbox/domain/payment"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// TestEveryFieldSurvivesReplayAndRead: a retry with the same Idempotency-Key
// is answered from the stored result (storedResult, idempotency.go), and a
// read and a list from the payments row as the INSERT or the UPDATE left it
// (get, repository.go; listSQL, list.go); each must give back every field of
// the payment (payment.Snapshot) and of the refund (payment.Refund) that the
// write committed. All of them derive from one mapping (row.go); the fields
// are found by reflection, so a field added to the domain fails here until
// the mapping carries it — and until one of the samples below sets it, since
// a field left at its zero value would pass however it is stored. No one payment sets every
// field (a canceled one is never captured), so the samples are a payment of
// each capture method and both ends of a manual one: captured then
// refunded, and canceled.
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

	// Each keyed write, with a retry that must replay what it committed.
	type write struct {
		name  string
		do    func() (payments.Committed, error)
		first payments.Committed
	}
	var writes []*write
	run := func(name string, do func() (payments.Committed, error)) payments.Committed {
		t.Helper()
		out, err := do()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		writes = append(writes, &write{name: name, do: do, first: out})
		return out
	}
	base := payments.CreatePayment{Principal: platform, Amount: 2500, Currency: "BRL", PayerID: "cus_1", MerchantID: "mer_1", Description: "coffee"}
	create := func(key, method string) func() (payments.Committed, error) {
		c := base
		c.IdempotencyKey, c.CaptureMethod = key, method
		return func() (payments.Committed, error) { return svc.Create(ctx, c) }
	}

	automatic := run("create automatic", create("create-1", "")).Payment.ID()
	run("refund automatic", func() (payments.Committed, error) {
		return svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: automatic, Amount: 250, IdempotencyKey: "refund-1"})
	})

	captured := run("authorize", create("create-2", "manual")).Payment.ID()
	run("capture", func() (payments.Committed, error) {
		return svc.Capture(ctx, payments.CapturePayment{Principal: platform, PaymentID: captured, Amount: 2000, IdempotencyKey: "capture-1"})
	})
	refunded := run("refund captured", func() (payments.Committed, error) {
		return svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: captured, Amount: 250, IdempotencyKey: "refund-2"})
	})

	canceled := run("authorize to cancel", create("create-3", "manual")).Payment.ID()
	canceledOut := run("cancel", func() (payments.Committed, error) {
		return svc.Cancel(ctx, payments.CancelPayment{Principal: platform, PaymentID: canceled, CancellationReason: "duplicate", IdempotencyKey: "cancel-1"})
	})

	// The payments change after the keyed writes, so that a replay which
	// read the payment's row instead of the stored result would show.
	latest := map[string]payments.Committed{}
	for name, id := range map[string]string{"automatic": string(automatic), "captured": string(captured)} {
		out, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: payment.ID(id), Amount: 100})
		if err != nil {
			t.Fatal(err)
		}
		latest[name] = out
	}
	latest["canceled"] = canceledOut

	requireEveryFieldSetInOne(t, "the refunded and the canceled payment", refunded.Payment.Snapshot(), canceledOut.Payment.Snapshot())
	requireEveryFieldSetInOne(t, "the refund", *refunded.Refund)

	for _, w := range writes {
		again, err := w.do()
		if err != nil || !again.Replayed {
			t.Fatalf("%s retry: replayed=%v err=%v, want the replay", w.name, again.Replayed, err)
		}
		requireSameFields(t, w.name+" replay: payment", w.first.Payment.Snapshot(), again.Payment.Snapshot())
		if (w.first.Refund == nil) != (again.Refund == nil) {
			t.Fatalf("%s replay: refund %v, want %v", w.name, again.Refund, w.first.Refund)
		}
		if w.first.Refund != nil {
			requireSameFields(t, w.name+" replay: refund", *w.first.Refund, *again.Refund)
		}
	}

	for name, want := range latest {
		read, err := svc.Get(ctx, platform, want.Payment.ID())
		if err != nil {
			t.Fatal(err)
		}
		requireSameFields(t, "read of the "+name+" payment", want.Payment.Snapshot(), read.Snapshot())
	}

	// A list reads the rows with a statement of its own (listSQL, list.go).
	listed, err := svc.List(ctx, payments.ListPayments{Principal: platform, MerchantID: "mer_1", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[payment.ID]*payment.Payment{}
	for _, p := range listed.Payments {
		byID[p.ID()] = p
	}
	for name, want := range latest {
		got, ok := byID[want.Payment.ID()]
		if !ok {
			t.Fatalf("list: the %s payment is missing", name)
		}
		requireSameFields(t, "list of the "+name+" payment (listSQL, list.go)", want.Payment.Snapshot(), got.Snapshot())
	}
}

// requireEveryFieldSetInOne fails for each field of the structs vs, all of
// one type, that every one of them leaves at its zero value: the test could
// not tell such a field dropped from kept.
func requireEveryFieldSetInOne(t *testing.T, what string, vs ...any) {
	t.Helper()
	typ := reflect.TypeOf(vs[0])
	for i := range typ.NumField() {
		set := false
		for _, v := range vs {
			set = set || !reflect.ValueOf(v).Field(i).IsZero()
		}
		if !set {
			t.Errorf("%s leave %s.%s at its zero value, so a replay or a read that drops it would pass: make a sample set it", what, typ, typ.Field(i).Name)
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
			t.Errorf("%s: %s.%s = %v, want %v: the mapping of the row (row.go) does not carry it", what, w.Type(), w.Type().Field(i).Name, gf, wf)
		}
	}
}
