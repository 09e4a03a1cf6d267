package payments_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/payments/paymentstest"
	"github.com/payments-outbox/payments-outbox/domain/payment"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

var manual = payments.CreatePayment{Principal: platform, Amount: 2500, Currency: "BRL", PayerID: "cus_1", MerchantID: "mer_1", CaptureMethod: "manual"}

func outboxTypes(repo *paymentstest.FakeRepository) []string {
	var types []string
	for _, m := range repo.Outbox() {
		types = append(types, m.Type)
	}
	return types
}

func TestCreateManualAuthorizes(t *testing.T) {
	svc, repo := newService()
	out, err := svc.Create(context.Background(), manual)
	if err != nil {
		t.Fatal(err)
	}
	p := out.Payment
	if p.Status() != payment.StatusAuthorized || !p.CaptureBefore().Equal(t0.Add(payments.DefaultAuthorizationTTL)) {
		t.Errorf("got %+v, want authorized until %s", p.Snapshot(), t0.Add(payments.DefaultAuthorizationTTL))
	}
	if got, want := outboxTypes(repo), []string{payment.TypeAuthorized}; !reflect.DeepEqual(got, want) {
		t.Errorf("outbox = %v, want %v, and no payment.created", got, want)
	}
	bad := manual
	bad.CaptureMethod = "later"
	var v *payment.ValidationError
	if _, err := svc.Create(context.Background(), bad); !errors.As(err, &v) || v.Problems[0].Field != "capture_method" {
		t.Errorf("an unknown capture method: got %v, want a validation error on capture_method", err)
	}
}

func TestCreateHonoursTheAuthorizationTTL(t *testing.T) {
	svc := payments.NewService(paymentstest.NewFakeRepository(), func() time.Time { return t0 },
		func() string { return "00000000-0000-4000-8000-000000000001" }, payments.Config{AuthorizationTTL: time.Hour})
	out, err := svc.Create(context.Background(), manual)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.Payment.CaptureBefore(), t0.Add(time.Hour); !got.Equal(want) {
		t.Errorf("capture_before = %s, want %s", got, want)
	}
}

func TestCaptureThenRefund(t *testing.T) {
	svc, repo := newService()
	ctx := context.Background()
	created, err := svc.Create(ctx, manual)
	if err != nil {
		t.Fatal(err)
	}
	id := created.Payment.ID()
	if _, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: id, Amount: 1}); !errors.Is(err, payment.ErrInvalidTransition) {
		t.Errorf("refund before capture: got %v, want ErrInvalidTransition", err)
	}
	if _, err := svc.Capture(ctx, payments.CapturePayment{Principal: platform, PaymentID: id, Amount: 2501}); !errors.Is(err, payment.ErrCaptureExceedsAmount) {
		t.Errorf("capture of more than authorized: got %v, want ErrCaptureExceedsAmount", err)
	}
	if _, err := svc.Capture(ctx, payments.CapturePayment{Principal: platform, PaymentID: id, Amount: -1}); !errors.Is(err, payment.ErrInvalid) {
		t.Errorf("a negative capture: got %v, want ErrInvalid", err)
	}
	out, err := svc.Capture(ctx, payments.CapturePayment{Principal: mer1, PaymentID: id, Amount: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if p := out.Payment; p.Status() != payment.StatusCaptured || p.CapturedMinor() != 2000 {
		t.Errorf("after capture: %+v", p.Snapshot())
	}
	if _, err := svc.Capture(ctx, payments.CapturePayment{Principal: platform, PaymentID: id}); !errors.Is(err, payment.ErrInvalidTransition) {
		t.Errorf("a second capture: got %v, want ErrInvalidTransition", err)
	}
	if _, err := svc.Cancel(ctx, payments.CancelPayment{Principal: platform, PaymentID: id}); !errors.Is(err, payment.ErrInvalidTransition) {
		t.Errorf("cancel after capture: got %v, want ErrInvalidTransition", err)
	}
	if _, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: id, Amount: 2001}); !errors.Is(err, payment.ErrRefundExceedsAmount) {
		t.Errorf("refund of more than was captured: got %v, want ErrRefundExceedsAmount", err)
	}
	out, err = svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: id, Amount: 2000})
	if err != nil || out.Payment.Status() != payment.StatusRefunded {
		t.Fatalf("refund of the whole capture: %v %+v", err, out.Payment)
	}
	want := []string{payment.TypeAuthorized, payment.TypeCaptured, payment.TypeRefunded}
	if got := outboxTypes(repo); !reflect.DeepEqual(got, want) {
		t.Errorf("outbox = %v, want %v", got, want)
	}
}

func TestCaptureDefaultsToTheWholeAmount(t *testing.T) {
	svc, _ := newService()
	ctx := context.Background()
	created, err := svc.Create(ctx, manual)
	if err != nil {
		t.Fatal(err)
	}
	out, err := svc.Capture(ctx, payments.CapturePayment{Principal: platform, PaymentID: created.Payment.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Payment.CapturedMinor(); got != 2500 {
		t.Errorf("captured %d, want the whole 2500", got)
	}
}

func TestCancel(t *testing.T) {
	svc, repo := newService()
	ctx := context.Background()
	created, err := svc.Create(ctx, manual)
	if err != nil {
		t.Fatal(err)
	}
	id := created.Payment.ID()
	for _, reason := range []string{"expired", "bored"} {
		if _, err := svc.Cancel(ctx, payments.CancelPayment{Principal: platform, PaymentID: id, CancellationReason: reason}); !errors.Is(err, payment.ErrInvalid) {
			t.Errorf("cancel for %q: got %v, want ErrInvalid: a client gives one of its four reasons", reason, err)
		}
	}
	if _, err := svc.Cancel(ctx, payments.CancelPayment{Principal: mer2, PaymentID: id}); !errors.Is(err, payment.ErrNotFound) {
		t.Errorf("another merchant's cancel: got %v, want ErrNotFound", err)
	}
	out, err := svc.Cancel(ctx, payments.CancelPayment{Principal: mer1, PaymentID: id})
	if err != nil {
		t.Fatal(err)
	}
	if p := out.Payment; p.Status() != payment.StatusCanceled || p.CancellationReason() != payment.CancelRequestedByCustomer || !p.CanceledAt().Equal(t0) {
		t.Errorf("after cancel: %+v", p.Snapshot())
	}
	if _, err := svc.Capture(ctx, payments.CapturePayment{Principal: platform, PaymentID: id}); !errors.Is(err, payment.ErrInvalidTransition) {
		t.Errorf("capture after cancel: got %v, want ErrInvalidTransition", err)
	}
	if got, want := outboxTypes(repo), []string{payment.TypeAuthorized, payment.TypeCanceled}; !reflect.DeepEqual(got, want) {
		t.Errorf("outbox = %v, want %v", got, want)
	}
}

func TestTransitionsReplayTheirKey(t *testing.T) {
	svc, repo := newService()
	ctx := context.Background()
	created, err := svc.Create(ctx, manual)
	if err != nil {
		t.Fatal(err)
	}
	capture := payments.CapturePayment{Principal: mer1, PaymentID: created.Payment.ID(), Amount: 100, IdempotencyKey: "cap-1"}
	first, err := svc.Capture(ctx, capture)
	if err != nil {
		t.Fatal(err)
	}
	again, err := svc.Capture(ctx, capture)
	if err != nil || !again.Replayed || !reflect.DeepEqual(again.Payment.Snapshot(), first.Payment.Snapshot()) {
		t.Errorf("a retried capture: got %v %+v, want the first answer replayed", err, again)
	}
	capture.Amount = 200
	if _, err := svc.Capture(ctx, capture); !errors.Is(err, idempotency.ErrKeyReused) {
		t.Errorf("the key with another amount: got %v, want ErrKeyReused", err)
	}
	if n := len(repo.Outbox()); n != 2 {
		t.Errorf("outbox has %d messages, want 2: a replay records nothing", n)
	}
}

// TestExpiryCancelsWhatWasNotCapturedInTime: an authorization past its
// capture_before is canceled with reason expired, through the outbox; one
// captured, canceled or still in time is left alone.
func TestExpiryCancelsWhatWasNotCapturedInTime(t *testing.T) {
	repo := paymentstest.NewFakeRepository()
	var mu sync.Mutex
	clock, n := t0, 0
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	newID := func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	}
	svc := payments.NewService(repo, now, newID, payments.Config{AuthorizationTTL: time.Hour})
	ctx := context.Background()
	var ids []payment.ID
	for range 5 {
		out, err := svc.Create(ctx, manual)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, out.Payment.ID())
	}
	if _, err := svc.Capture(ctx, payments.CapturePayment{Principal: platform, PaymentID: ids[0]}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Cancel(ctx, payments.CancelPayment{Principal: platform, PaymentID: ids[1]}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	clock = t0.Add(30 * time.Minute)
	mu.Unlock()
	late, err := svc.Create(ctx, manual) // capture_before t0+90m
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	clock = t0.Add(time.Hour)
	mu.Unlock()

	expiry := payments.NewExpiry(svc, repo.ExpiredAuthorizations, logtest.Discard(), payments.ExpiryConfig{Batch: 2})
	got, err := expiry.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got != 3 {
		t.Errorf("canceled %d, want the 3 authorizations past capture_before", got)
	}
	for i, id := range append(ids, late.Payment.ID()) {
		p, err := repo.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int]payment.Status{0: payment.StatusCaptured, 1: payment.StatusCanceled, 5: payment.StatusAuthorized}[i]
		if want == "" {
			want = payment.StatusCanceled
			if p.CancellationReason() != payment.CancelExpired {
				t.Errorf("payment %d: reason %q, want expired", i, p.CancellationReason())
			}
		}
		if p.Status() != want {
			t.Errorf("payment %d: status %q, want %q", i, p.Status(), want)
		}
	}
	if again, err := expiry.Sweep(ctx); err != nil || again != 0 {
		t.Errorf("a second sweep: canceled %d, %v; want none", again, err)
	}
	canceled := 0
	for _, typ := range outboxTypes(repo) {
		if typ == payment.TypeCanceled {
			canceled++
		}
	}
	if canceled != 4 {
		t.Errorf("%d payment.canceled in the outbox, want 4: one per cancel, the expiry's included", canceled)
	}
}

// TestExpiryOnEveryReplicaCancelsOnce: sweeps that run at once, as on
// replicas that list the same payments, cancel each of them once.
func TestExpiryOnEveryReplicaCancelsOnce(t *testing.T) {
	repo := paymentstest.NewFakeRepository()
	var mu sync.Mutex
	n := 0
	newID := func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	}
	created := payments.NewService(repo, func() time.Time { return t0 }, newID, payments.Config{AuthorizationTTL: time.Hour})
	ctx := context.Background()
	for range 20 {
		if _, err := created.Create(ctx, manual); err != nil {
			t.Fatal(err)
		}
	}
	later := payments.NewService(repo, func() time.Time { return t0.Add(time.Hour) }, newID, payments.Config{})
	// Every replica lists the same payments before any cancels one.
	all, err := repo.ExpiredAuthorizations(ctx, t0.Add(time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	stale := func(context.Context, time.Time, int) ([]payment.ID, error) { return all, nil }
	var wg sync.WaitGroup
	totals := make([]int, 4)
	for i := range totals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := payments.NewExpiry(later, stale, logtest.Discard(), payments.ExpiryConfig{Batch: 100}).Sweep(ctx)
			if err != nil {
				t.Error(err)
			}
			totals[i] = n
		}()
	}
	wg.Wait()
	sum := 0
	for _, n := range totals {
		sum += n
	}
	if sum != 20 {
		t.Errorf("the replicas canceled %v, %d in all, want 20: each payment once", totals, sum)
	}
	canceled := 0
	for _, typ := range outboxTypes(repo) {
		if typ == payment.TypeCanceled {
			canceled++
		}
	}
	if canceled != 20 {
		t.Errorf("%d payment.canceled in the outbox, want 20", canceled)
	}
}

// failingUpdates is a Repository whose updates of one payment fail.
type failingUpdates struct {
	payments.Repository
	bad payment.ID
}

func (r failingUpdates) Update(ctx context.Context, id payment.ID, key *idempotency.Key, fn func(*payment.Payment) (payments.Change, error)) (payments.Committed, error) {
	if id == r.bad {
		return payments.Committed{}, errors.New("a row that cannot be read")
	}
	return r.Repository.Update(ctx, id, key, fn)
}

// TestExpiryPassesOverAPaymentItCannotCancel: one payment whose cancel fails,
// first in the list, does not hold back the others; the sweep reports it.
func TestExpiryPassesOverAPaymentItCannotCancel(t *testing.T) {
	fake := paymentstest.NewFakeRepository()
	n := 0
	newID := func() string { n++; return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }
	create := payments.NewService(fake, func() time.Time { return t0 }, newID, payments.Config{AuthorizationTTL: time.Hour})
	ctx := context.Background()
	var first payment.ID
	for i := range 3 {
		out, err := create.Create(ctx, manual)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = out.Payment.ID()
		}
	}
	later := payments.NewService(failingUpdates{fake, first}, func() time.Time { return t0.Add(time.Hour) }, newID, payments.Config{})
	got, err := payments.NewExpiry(later, fake.ExpiredAuthorizations, logtest.Discard(), payments.ExpiryConfig{Batch: 2}).Sweep(ctx)
	if got != 2 || err == nil {
		t.Errorf("canceled %d, err %v; want the 2 others canceled and the failure reported", got, err)
	}
}
