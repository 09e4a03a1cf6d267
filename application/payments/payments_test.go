package payments_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/payments/paymentstest"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func newService() (*payments.Service, *paymentstest.FakeRepository) {
	repo := paymentstest.NewFakeRepository()
	var mu sync.Mutex
	n := 0
	newID := func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	}
	return payments.NewService(repo, func() time.Time { return t0 }, newID), repo
}

var valid = payments.CreatePayment{Amount: 1050, Currency: "brl", PayerID: "cus_1", MerchantID: "mer_1"}

func TestCreate(t *testing.T) {
	svc, repo := newService()
	out, err := svc.Create(context.Background(), valid)
	if err != nil {
		t.Fatal(err)
	}
	p := out.Payment
	if p.Amount().Minor() != 1050 || p.Amount().Currency() != "BRL" || p.Status() != payment.StatusCreated || !p.CreatedAt().Equal(t0) {
		t.Errorf("got %+v", p.Snapshot())
	}
	ev := repo.Events()
	if len(ev) != 1 || ev[0].EventType() != payment.TypeCreated || ev[0].AggregateID() != p.ID() {
		t.Errorf("outbox = %+v, want one payment.created", ev)
	}
}

func TestCreateValidationListsEveryField(t *testing.T) {
	svc, repo := newService()
	_, err := svc.Create(context.Background(), payments.CreatePayment{Amount: -5, Currency: "XYZ", MerchantID: "m"})
	var v *payment.ValidationError
	if !errors.As(err, &v) {
		t.Fatalf("err = %v, want *payment.ValidationError", err)
	}
	var fields []string
	for _, p := range v.Problems {
		fields = append(fields, p.Field)
	}
	if want := []string{"amount", "currency", "payer_id"}; !reflect.DeepEqual(fields, want) {
		t.Errorf("fields = %v, want %v", fields, want)
	}
	if len(repo.Events()) != 0 {
		t.Error("an invalid request wrote to the outbox")
	}
}

func TestIdempotentCreate(t *testing.T) {
	svc, repo := newService()
	ctx := context.Background()
	req := valid
	req.IdempotencyKey = "order-42"
	first, err := svc.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	upper := req
	upper.Currency = "BRL" // the same request, spelled differently
	again, err := svc.Create(ctx, upper)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.Payment.ID() != first.Payment.ID() {
		t.Errorf("retry: replayed=%v id=%s, want replay of %s", again.Replayed, again.Payment.ID(), first.Payment.ID())
	}
	changed := req
	changed.Amount = 1051
	if _, err := svc.Create(ctx, changed); !errors.Is(err, payments.ErrKeyReused) {
		t.Errorf("changed body: err = %v, want ErrKeyReused", err)
	}
	if n := len(repo.Events()); n != 1 {
		t.Errorf("outbox has %d events, want 1", n)
	}
}

func TestInvalidIdempotencyKey(t *testing.T) {
	svc, _ := newService()
	for _, key := range []string{strings.Repeat("k", payments.MaxKeyLen+1), "has space", "tab\t", "ünicode"} {
		req := valid
		req.IdempotencyKey = key
		if _, err := svc.Create(context.Background(), req); !errors.Is(err, payments.ErrInvalidKey) {
			t.Errorf("key %q: err = %v, want ErrInvalidKey", key, err)
		}
	}
}

func TestRefund(t *testing.T) {
	svc, repo := newService()
	ctx := context.Background()
	created, err := svc.Create(ctx, valid)
	if err != nil {
		t.Fatal(err)
	}
	id := created.Payment.ID()

	out, err := svc.Refund(ctx, payments.RefundPayment{PaymentID: id, Amount: 50})
	if err != nil {
		t.Fatal(err)
	}
	if out.Refund == nil || out.Refund.Amount.Minor() != 50 || out.Payment.Status() != payment.StatusPartiallyRefunded {
		t.Fatalf("outcome = %+v %+v", out.Payment.Snapshot(), out.Refund)
	}
	if _, err := svc.Refund(ctx, payments.RefundPayment{PaymentID: id, Amount: 1001}); !errors.Is(err, payment.ErrRefundExceedsAmount) {
		t.Errorf("over-refund: err = %v, want ErrRefundExceedsAmount", err)
	}
	if _, err := svc.Refund(ctx, payments.RefundPayment{PaymentID: id, Amount: 0}); !errors.Is(err, payment.ErrInvalid) {
		t.Errorf("zero refund: err = %v, want ErrInvalid", err)
	}
	if _, err := svc.Refund(ctx, payments.RefundPayment{PaymentID: "00000000-0000-4000-8000-999999999999", Amount: 1}); !errors.Is(err, payment.ErrNotFound) {
		t.Errorf("unknown payment: err = %v, want ErrNotFound", err)
	}
	out, err = svc.Refund(ctx, payments.RefundPayment{PaymentID: id, Amount: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if out.Payment.Status() != payment.StatusRefunded || out.Payment.RefundedMinor() != 1050 {
		t.Errorf("after full refund: %+v", out.Payment.Snapshot())
	}
	var types []string
	for _, e := range repo.Events() {
		types = append(types, e.EventType())
	}
	if want := []string{"payment.created", "payment.refunded", "payment.refunded"}; !reflect.DeepEqual(types, want) {
		t.Errorf("outbox = %v, want %v", types, want)
	}
}

func TestConcurrentRefundsNeverExceedTheAmount(t *testing.T) {
	svc, _ := newService()
	ctx := context.Background()
	created, err := svc.Create(ctx, payments.CreatePayment{Amount: 1000, Currency: "BRL", PayerID: "a", MerchantID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 20 {
		wg.Go(func() {
			if _, err := svc.Refund(ctx, payments.RefundPayment{PaymentID: created.Payment.ID(), Amount: 100}); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ok != 10 {
		t.Errorf("%d refunds succeeded, want 10", ok)
	}
}
