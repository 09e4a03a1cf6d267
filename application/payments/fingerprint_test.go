package payments_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/payments/paymentstest"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// keyRecorder is a Repository that remembers the last idempotency key a
// write handed it, so that a test can read the fingerprint the use case
// computed.
type keyRecorder struct {
	payments.Repository
	mu   sync.Mutex
	last *payments.IdempotencyKey
}

func (r *keyRecorder) Create(ctx context.Context, p *payment.Payment, msgs []outbox.Message, key *payments.IdempotencyKey) (payments.Committed, error) {
	r.record(key)
	return r.Repository.Create(ctx, p, msgs, key)
}

func (r *keyRecorder) Update(ctx context.Context, id payment.ID, key *payments.IdempotencyKey, fn func(*payment.Payment) (payments.Change, error)) (payments.Committed, error) {
	r.record(key)
	return r.Repository.Update(ctx, id, key, fn)
}

func (r *keyRecorder) record(key *payments.IdempotencyKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = key
}

// take returns the key recorded since the last take, nil if none.
func (r *keyRecorder) take() *payments.IdempotencyKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.last
	r.last = nil
	return k
}

func newRecordingService(t *testing.T) (*payments.Service, *keyRecorder) {
	t.Helper()
	rec := &keyRecorder{Repository: paymentstest.NewFakeRepository()}
	n := 0
	newID := func() string { n++; return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }
	return payments.NewService(rec, func() time.Time { return t0 }, newID, payments.Config{}), rec
}

// The request fingerprints a release stores with every idempotency key.
// They are golden: the keys a client used before an upgrade are checked
// after it against what the new release computes, so a change to the
// fingerprint — a request field folded in or left out, another separator,
// another hash — answers every such retry 422 idempotency-key-reused instead
// of its replay. Change them only with a migration of the stored keys, or
// wait until every key stored under the old fingerprint has expired
// (docs/RUNBOOK.md, Retention).
const (
	goldenCreateFingerprint = "ac0f14d63b63db3dcd18f382bc8fb2cfdee3c99e75b402a963f695eb554c2b05"
	goldenRefundFingerprint = "65afbad8ca9a1613fcd9f6d3c3e0782c5d12307fd2f9946e1468ca8bd1a55640"
)

// TestFingerprintIsStableAcrossReleases pins the fingerprint of one create
// and one refund request.
func TestFingerprintIsStableAcrossReleases(t *testing.T) {
	svc, rec := newRecordingService(t)
	ctx := context.Background()
	create := payments.CreatePayment{Principal: platform, Amount: 1050, Currency: "brl", PayerID: "cus_1", MerchantID: "mer_1",
		Description: "order 42", IdempotencyKey: "order-42"}
	out, err := svc.Create(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); got == nil || got.Fingerprint != goldenCreateFingerprint {
		t.Errorf("create fingerprint = %v, want %q: a change to the fingerprint breaks every retry of a request made before the upgrade (see goldenCreateFingerprint)", got, goldenCreateFingerprint)
	}
	if _, err := svc.Refund(ctx, payments.RefundPayment{Principal: mer1, PaymentID: out.Payment.ID(), Amount: 300, IdempotencyKey: "refund-42"}); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); got == nil || got.Fingerprint != goldenRefundFingerprint {
		t.Errorf("refund fingerprint = %v, want %q: a change to the fingerprint breaks every retry of a request made before the upgrade (see goldenRefundFingerprint)", got, goldenRefundFingerprint)
	}
}

// TestEveryRequestFieldIsFingerprinted varies each field of each write's
// input, found by reflection, and requires another fingerprint: a field the
// fingerprint leaves out lets a retry with a different request replay the
// first one's answer. A new field therefore fails here until it is folded
// in — which changes the golden fingerprints above, and that is a decision
// about the keys already stored.
func TestEveryRequestFieldIsFingerprinted(t *testing.T) {
	// Not part of the request: who asks (the key's scope) and the key itself.
	notFingerprinted := map[string]bool{"Principal": true, "IdempotencyKey": true}

	svc, rec := newRecordingService(t)
	ctx := context.Background()
	create := payments.CreatePayment{Principal: platform, Amount: 1050, Currency: "brl", PayerID: "cus_1", MerchantID: "mer_1", Description: "order 42"}
	first, err := svc.Create(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	other, err := svc.Create(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	refund := payments.RefundPayment{Principal: platform, PaymentID: first.Payment.ID(), Amount: 300}
	manual := create
	manual.CaptureMethod = "manual"
	authorized, err := svc.Create(ctx, manual)
	if err != nil {
		t.Fatal(err)
	}
	// A payment is captured or canceled once, so every request but the
	// first is refused by the domain, under the payment's lock — after the
	// use case has handed the repository its key, which is all this test
	// reads: transitioned accepts that refusal as the request's answer.
	transitioned := func(err error) error {
		if errors.Is(err, payment.ErrInvalidTransition) {
			return nil
		}
		return err
	}
	capture := payments.CapturePayment{Principal: platform, PaymentID: authorized.Payment.ID(), Amount: 300}
	cancel := payments.CancelPayment{Principal: platform, PaymentID: authorized.Payment.ID(), CancellationReason: "duplicate"}
	// Values a varied string field may take, the first one that makes a
	// valid request is used: another currency, another payment, another
	// capture method, another cancellation reason.
	alternatives := []string{"USD", string(other.Payment.ID()), "manual", "fraudulent"}

	writes := []struct {
		name string
		req  any
		do   func(req any) error
	}{
		{"CreatePayment", create, func(req any) error { _, err := svc.Create(ctx, req.(payments.CreatePayment)); return err }},
		{"RefundPayment", refund, func(req any) error { _, err := svc.Refund(ctx, req.(payments.RefundPayment)); return err }},
		{"CapturePayment", capture, func(req any) error {
			_, err := svc.Capture(ctx, req.(payments.CapturePayment))
			return transitioned(err)
		}},
		{"CancelPayment", cancel, func(req any) error { _, err := svc.Cancel(ctx, req.(payments.CancelPayment)); return transitioned(err) }},
	}
	n := 0
	fingerprint := func(do func(any) error, req reflect.Value) (string, bool) {
		n++
		req.FieldByName("IdempotencyKey").SetString("k-" + strconv.Itoa(n))
		if err := do(req.Interface()); err != nil {
			rec.take()
			return "", false
		}
		k := rec.take()
		if k == nil {
			t.Fatalf("the write handed the repository no idempotency key")
		}
		return k.Fingerprint, true
	}
	for _, w := range writes {
		base := reflect.New(reflect.TypeOf(w.req)).Elem()
		base.Set(reflect.ValueOf(w.req))
		want, ok := fingerprint(w.do, base)
		if !ok {
			t.Fatalf("%s: the base request fails", w.name)
		}
		for i := range base.NumField() {
			f := base.Type().Field(i)
			if notFingerprinted[f.Name] {
				continue
			}
			var candidates []reflect.Value
			switch f.Type.Kind() {
			case reflect.String:
				for _, s := range append([]string{base.Field(i).String() + "x"}, alternatives...) {
					candidates = append(candidates, reflect.ValueOf(s).Convert(f.Type))
				}
			case reflect.Int, reflect.Int64, reflect.Int32:
				candidates = append(candidates, reflect.ValueOf(base.Field(i).Int()+1).Convert(f.Type))
			default:
				t.Errorf("%s.%s is a %s: teach this test how to vary it, and fold the field into the fingerprint", w.name, f.Name, f.Type)
				continue
			}
			tried := false
			for _, c := range candidates {
				req := reflect.New(base.Type()).Elem()
				req.Set(base)
				req.Field(i).Set(c)
				got, ok := fingerprint(w.do, req)
				if !ok {
					continue
				}
				tried = true
				if got == want {
					t.Errorf("%s.%s changed from %v to %v and the fingerprint did not: a retry with the same key and another %s would replay the first answer. Fold it into the fingerprint (idempotencyKey in payments.go), and read goldenCreateFingerprint's comment first", w.name, f.Name, base.Field(i), c, f.Name)
				}
				break
			}
			if !tried {
				t.Errorf("%s.%s: no varied value made a valid request; add one to alternatives", w.name, f.Name)
			}
		}
	}
}
