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

	"github.com/payments-outbox/payments-outbox/application/idempotency"
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
	last *idempotency.Key
}

func (r *keyRecorder) Create(ctx context.Context, p *payment.Payment, msgs []outbox.Message, key *idempotency.Key) (payments.Committed, error) {
	r.record(key)
	return r.Repository.Create(ctx, p, msgs, key)
}

func (r *keyRecorder) Update(ctx context.Context, id payment.ID, key *idempotency.Key, fn func(*payment.Payment) (payments.Change, error)) (payments.Committed, error) {
	r.record(key)
	return r.Repository.Update(ctx, id, key, fn)
}

func (r *keyRecorder) record(key *idempotency.Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = key
}

// take returns the key recorded since the last take, nil if none.
func (r *keyRecorder) take() *idempotency.Key {
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
// fingerprint — a field added to a request or moved in it, another
// separator, another hash — answers every such retry 422 idempotency-key-reused instead
// of its replay. Change them only with a migration of the stored keys, or
// wait until every key stored under the old fingerprint has expired
// (docs/RUNBOOK.md, Retention).
const (
	goldenCreateFingerprint = "b192f5f51739f8d1ee57b351eac22ca10b59eb5cc592448e76867fc4efc0897b"
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

// TestEveryWriteIsInTheTable: every method of Service whose request takes
// an Idempotency-Key is a write of the table (payments.Writes), and every
// write of the table is the request of one method. A use case added without
// its entry could not fingerprint its keyed requests; this names it before
// a request does.
func TestEveryWriteIsInTheTable(t *testing.T) {
	inTable := map[reflect.Type]string{}
	for _, w := range payments.Writes() {
		inTable[w.Request] = w.Op
	}
	served := map[reflect.Type]bool{}
	svc := reflect.TypeFor[*payments.Service]()
	for i := range svc.NumMethod() {
		m := svc.Method(i)
		for j := range m.Type.NumIn() {
			in := m.Type.In(j)
			if in.Kind() != reflect.Struct {
				continue
			}
			if _, keyed := in.FieldByName("IdempotencyKey"); !keyed {
				continue
			}
			served[in] = true
			if _, ok := inTable[in]; !ok {
				t.Errorf("Service.%s takes a %s, which has an IdempotencyKey, and is not in the table of writes (writes.go): add it, or a retry of it cannot be told from another request", m.Name, in)
			}
		}
	}
	for typ, op := range inTable {
		if !served[typ] {
			t.Errorf("the write %q of the table takes a %s, which no method of Service takes", op, typ)
		}
	}
}

// writeCase is, for a write of the table, a valid request and how to run
// it: what TestEveryRequestFieldIsFingerprinted varies.
type writeCase struct {
	req any
	do  func(req any) error
}

// TestEveryRequestFieldIsFingerprinted walks the table of writes and, for
// each, varies each field of its input, found by reflection, and requires
// another fingerprint: a field the fingerprint left out would let a retry
// with a different request replay the first one's answer. A write of the
// table without a case here fails, and so does a field this test cannot
// vary; a new field changes the golden fingerprints above, which is a
// decision about the keys already stored.
func TestEveryRequestFieldIsFingerprinted(t *testing.T) {
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
	// Values a varied string field may take, the first one that makes a
	// valid request is used: another currency, another payment, another
	// capture method, another cancellation reason.
	alternatives := []string{"USD", string(other.Payment.ID()), "manual", "fraudulent"}
	cases := map[string]writeCase{
		"create": {create, func(req any) error { _, err := svc.Create(ctx, req.(payments.CreatePayment)); return err }},
		"refund": {payments.RefundPayment{Principal: platform, PaymentID: first.Payment.ID(), Amount: 300},
			func(req any) error { _, err := svc.Refund(ctx, req.(payments.RefundPayment)); return err }},
		"capture": {payments.CapturePayment{Principal: platform, PaymentID: authorized.Payment.ID(), Amount: 300},
			func(req any) error {
				_, err := svc.Capture(ctx, req.(payments.CapturePayment))
				return transitioned(err)
			}},
		"cancel": {payments.CancelPayment{Principal: platform, PaymentID: authorized.Payment.ID(), CancellationReason: "duplicate"},
			func(req any) error { _, err := svc.Cancel(ctx, req.(payments.CancelPayment)); return transitioned(err) }},
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
	for _, w := range payments.Writes() {
		c, ok := cases[w.Op]
		if !ok {
			t.Errorf("the write %q of the table has no case in TestEveryRequestFieldIsFingerprinted: give it a valid request", w.Op)
			continue
		}
		if reflect.TypeOf(c.req) != w.Request {
			t.Fatalf("the case of %q is a %T, the write takes a %s", w.Op, c.req, w.Request)
		}
		base := reflect.New(w.Request).Elem()
		base.Set(reflect.ValueOf(c.req))
		want, ok := fingerprint(c.do, base)
		if !ok {
			t.Fatalf("%s: the base request fails", w.Op)
		}
		for i := range base.NumField() {
			f := base.Type().Field(i)
			if payments.NotFingerprinted(f.Name) {
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
				t.Errorf("%s.%s is a %s: teach this test how to vary it, and fingerprint how to write it", w.Request, f.Name, f.Type)
				continue
			}
			tried := false
			for _, cand := range candidates {
				req := reflect.New(base.Type()).Elem()
				req.Set(base)
				req.Field(i).Set(cand)
				got, ok := fingerprint(c.do, req)
				if !ok {
					continue
				}
				tried = true
				if got == want {
					t.Errorf("%s.%s changed from %v to %v and the fingerprint did not: a retry with the same key and another %s would replay the first answer (fingerprint, writes.go)", w.Request, f.Name, base.Field(i), cand, f.Name)
				}
				break
			}
			if !tried {
				t.Errorf("%s.%s: no varied value made a valid request; add one to alternatives", w.Request, f.Name)
			}
		}
	}
}
