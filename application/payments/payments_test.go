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

	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
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
	return payments.NewService(repo, func() time.Time { return t0 }, newID, payments.Config{}), repo
}

// The principals the tests act as.
var (
	platform = access.PlatformPrincipal("platkey")
	mer1     = access.MerchantPrincipal("key1", "mer_1")
	mer2     = access.MerchantPrincipal("key2", "mer_2")
)

var valid = payments.CreatePayment{Principal: platform, Amount: 1050, Currency: "brl", PayerID: "cus_1", MerchantID: "mer_1"}

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
	outbox := repo.Outbox()
	if len(outbox) != 1 || outbox[0].Type != payment.TypeCreated || outbox[0].AggregateID.String() != string(p.ID()) {
		t.Errorf("outbox = %+v, want one payment.created", outbox)
	}
}

// TestCreateRefusesAmountsOverTheLimit: the limit is the deployment's
// (Config.MaxAmount, by default DefaultMaxAmount); an amount up to it is
// taken, one above it is refused before anything is stored, for automatic
// and manual payments alike.
func TestCreateRefusesAmountsOverTheLimit(t *testing.T) {
	ctx := context.Background()
	svc, repo := newService()
	for _, method := range []string{"automatic", "manual"} {
		at, over := valid, valid
		at.CaptureMethod, over.CaptureMethod = method, method
		at.Amount, over.Amount = payments.DefaultMaxAmount, payments.DefaultMaxAmount+1
		if _, err := svc.Create(ctx, at); err != nil {
			t.Errorf("%s at the default limit: %v", method, err)
		}
		if _, err := svc.Create(ctx, over); !errors.Is(err, payments.ErrAmountLimit) || !strings.Contains(err.Error(), "999999999999") {
			t.Errorf("%s one past the default limit: got %v, want ErrAmountLimit naming the limit", method, err)
		}
	}
	if n := len(repo.Outbox()); n != 2 {
		t.Errorf("outbox holds %d messages, want the 2 payments within the limit", n)
	}

	low := payments.NewService(paymentstest.NewFakeRepository(), func() time.Time { return t0 }, func() string { return "00000000-0000-4000-8000-000000000001" },
		payments.Config{MaxAmount: 1000})
	if _, err := low.Create(ctx, valid); !errors.Is(err, payments.ErrAmountLimit) {
		t.Errorf("1050 with a limit of 1000: got %v, want ErrAmountLimit", err)
	}
}

func TestCreateValidationListsEveryField(t *testing.T) {
	svc, repo := newService()
	_, err := svc.Create(context.Background(), payments.CreatePayment{Principal: platform, Amount: -5, Currency: "XYZ", MerchantID: "m"})
	var v *payment.ValidationError
	if !errors.As(err, &v) {
		t.Fatalf("err = %v, want *payment.ValidationError", err)
	}
	want := []payment.FieldProblem{
		{Field: "amount", Detail: "must be an integer greater than zero (minor units)"},
		{Field: "currency", Detail: "must be an ISO 4217 currency code"},
		{Field: "payer_id", Detail: "is required"},
	}
	if !reflect.DeepEqual(v.Problems, want) {
		t.Errorf("problems = %+v, want %+v", v.Problems, want)
	}
	if len(repo.Outbox()) != 0 {
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
	if _, err := svc.Create(ctx, changed); !errors.Is(err, idempotency.ErrKeyReused) {
		t.Errorf("changed body: err = %v, want ErrKeyReused", err)
	}
	if n := len(repo.Outbox()); n != 1 {
		t.Errorf("outbox has %d messages, want 1", n)
	}
}

func TestInvalidIdempotencyKey(t *testing.T) {
	svc, _ := newService()
	for _, key := range []string{strings.Repeat("k", idempotency.MaxKeyLen+1), "has space", "tab\t", "ünicode"} {
		req := valid
		req.IdempotencyKey = key
		if _, err := svc.Create(context.Background(), req); !errors.Is(err, idempotency.ErrInvalidKey) {
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

	out, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: id, Amount: 50})
	if err != nil {
		t.Fatal(err)
	}
	if out.Refund == nil || out.Refund.Amount.Minor() != 50 || out.Payment.Status() != payment.StatusPartiallyRefunded {
		t.Fatalf("outcome = %+v %+v", out.Payment.Snapshot(), out.Refund)
	}
	if _, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: id, Amount: 1001}); !errors.Is(err, payment.ErrRefundExceedsAmount) {
		t.Errorf("over-refund: err = %v, want ErrRefundExceedsAmount", err)
	}
	if _, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: id, Amount: 0}); !errors.Is(err, payment.ErrInvalid) {
		t.Errorf("zero refund: err = %v, want ErrInvalid", err)
	}
	if _, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: "00000000-0000-4000-8000-999999999999", Amount: 1}); !errors.Is(err, payment.ErrNotFound) {
		t.Errorf("unknown payment: err = %v, want ErrNotFound", err)
	}
	out, err = svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: id, Amount: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if out.Payment.Status() != payment.StatusRefunded || out.Payment.RefundedMinor() != 1050 {
		t.Errorf("after full refund: %+v", out.Payment.Snapshot())
	}
	var types []string
	for _, m := range repo.Outbox() {
		types = append(types, m.Type)
	}
	if want := []string{"payment.created", "payment.refunded", "payment.refunded"}; !reflect.DeepEqual(types, want) {
		t.Errorf("outbox = %v, want %v", types, want)
	}
}

// TestWritesHandTheEncodedEvents: each write hands the repository its
// events already encoded, as EncodeEvent renders them under the message's
// id, carrying the trace context of the call that made the write.
func TestWritesHandTheEncodedEvents(t *testing.T) {
	type callKey struct{}
	repo := paymentstest.NewFakeRepository()
	n := 0
	svc := payments.NewService(repo, func() time.Time { return t0 }, func() string {
		n++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	}, payments.Config{TraceContext: func(ctx context.Context) payments.TraceContext {
		tc, _ := ctx.Value(callKey{}).(payments.TraceContext)
		return tc
	}})
	tc := payments.TraceContext{Parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", State: "vendor=opaque"}
	ctx := context.WithValue(context.Background(), callKey{}, tc)
	created, err := svc.Create(ctx, valid)
	if err != nil {
		t.Fatal(err)
	}
	refunded, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: created.Payment.ID(), Amount: 50})
	if err != nil {
		t.Fatal(err)
	}
	p, r := refunded.Payment, refunded.Refund
	total, err := payment.NewMoney(p.RefundedMinor(), p.Amount().Currency())
	if err != nil {
		t.Fatal(err)
	}
	want := []payment.Event{
		payment.Created{PaymentID: p.ID(), Amount: p.Amount(), PayerID: p.PayerID(), MerchantID: p.MerchantID(), At: p.CreatedAt()},
		payment.Refunded{PaymentID: p.ID(), RefundID: r.ID, Amount: r.Amount, RefundedTotal: total,
			PayerID: p.PayerID(), MerchantID: p.MerchantID(), At: r.CreatedAt},
	}
	outbox := repo.Outbox()
	if len(outbox) != len(want) {
		t.Fatalf("outbox = %+v, want %d messages", outbox, len(want))
	}
	for i, m := range outbox {
		e := want[i]
		payload, err := payments.EncodeEvent(m.ID.String(), e, tc)
		if err != nil {
			t.Fatal(err)
		}
		got := payments.TraceContext{Parent: m.TraceParent, State: m.TraceState}
		if m.Type != e.EventType() || m.AggregateID.String() != string(p.ID()) || got != tc || string(m.Payload) != string(payload) {
			t.Errorf("message %d = %s %s %+v\n%s\nwant %s %s %+v\n%s", i, m.Type, m.AggregateID, got, m.Payload, e.EventType(), p.ID(), tc, payload)
		}
		if m.ID.Version() != 7 {
			t.Errorf("message %d id %s is a UUIDv%d, want a time-ordered v7", i, m.ID, m.ID.Version())
		}
	}
}

func TestConcurrentRefundsNeverExceedTheAmount(t *testing.T) {
	svc, _ := newService()
	ctx := context.Background()
	created, err := svc.Create(ctx, payments.CreatePayment{Principal: platform, Amount: 1000, Currency: "BRL", PayerID: "a", MerchantID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 20 {
		wg.Go(func() {
			if _, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: created.Payment.ID(), Amount: 100}); err == nil {
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

// TestAMerchantActsForItselfOnly: the scoping rule, in the use cases.
func TestAMerchantActsForItselfOnly(t *testing.T) {
	svc, repo := newService()
	ctx := context.Background()

	// Create: the merchant is the key's when left out; another is refused.
	own := payments.CreatePayment{Principal: mer1, Amount: 100, Currency: "BRL", PayerID: "cus_1"}
	out, err := svc.Create(ctx, own)
	if err != nil || out.Payment.MerchantID() != "mer_1" {
		t.Fatalf("create without a merchant as mer_1: %v, %v", out.Payment, err)
	}
	id := out.Payment.ID()
	other := own
	other.MerchantID = "mer_2"
	var v *payment.ValidationError
	if _, err := svc.Create(ctx, other); !errors.As(err, &v) || v.Problems[0].Field != "merchant_id" {
		t.Errorf("mer_1 creating for mer_2: err = %v, want a validation error on merchant_id", err)
	}
	noMerchant := own
	noMerchant.Principal = platform
	if _, err := svc.Create(ctx, noMerchant); !errors.As(err, &v) {
		t.Errorf("the platform without a merchant: err = %v, want a validation error", err)
	}

	// Get and Refund: another merchant's payment is not found.
	if _, err := svc.Get(ctx, mer2, id); !errors.Is(err, payment.ErrNotFound) {
		t.Errorf("mer_2 reads mer_1's payment: err = %v, want ErrNotFound", err)
	}
	for _, key := range []string{"", "r-1"} {
		if _, err := svc.Refund(ctx, payments.RefundPayment{Principal: mer2, PaymentID: id, Amount: 10, IdempotencyKey: key}); !errors.Is(err, payment.ErrNotFound) {
			t.Errorf("mer_2 refunds mer_1's payment (key %q): err = %v, want ErrNotFound", key, err)
		}
	}
	for _, who := range []access.Principal{mer1, platform} {
		if _, err := svc.Get(ctx, who, id); err != nil {
			t.Errorf("%+v reads mer_1's payment: %v", who, err)
		}
	}
	if _, err := svc.Refund(ctx, payments.RefundPayment{Principal: mer1, PaymentID: id, Amount: 10}); err != nil {
		t.Errorf("mer_1 refunds its payment: %v", err)
	}

	// No principal: refused, never served unscoped.
	for name, err := range map[string]error{
		"create": func() error {
			_, err := svc.Create(ctx, payments.CreatePayment{Amount: 1, Currency: "BRL", PayerID: "a", MerchantID: "b"})
			return err
		}(),
		"get":    func() error { _, err := svc.Get(ctx, access.Principal{}, id); return err }(),
		"refund": func() error { _, err := svc.Refund(ctx, payments.RefundPayment{PaymentID: id, Amount: 1}); return err }(),
	} {
		if !errors.Is(err, access.ErrUnauthenticated) {
			t.Errorf("%s without a principal: err = %v, want ErrUnauthenticated", name, err)
		}
	}
	if got := len(repo.Outbox()); got != 2 {
		t.Errorf("%d outbox messages, want 2 (mer_1's payment and its refund)", got)
	}
}

// TestIdempotencyKeysArePerMerchant: the same key used by two merchants
// makes two payments; the platform acting for a merchant shares its scope.
func TestIdempotencyKeysArePerMerchant(t *testing.T) {
	svc, _ := newService()
	ctx := context.Background()
	req := payments.CreatePayment{Amount: 100, Currency: "BRL", PayerID: "cus_1", IdempotencyKey: "order-1"}
	a, b := req, req
	a.Principal, b.Principal = mer1, mer2
	first, err := svc.Create(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	second, err := svc.Create(ctx, b)
	if err != nil || second.Replayed || second.Payment.ID() == first.Payment.ID() {
		t.Fatalf("mer_2 with mer_1's key: %+v, %v; want a payment of its own", second, err)
	}
	viaPlatform := req
	viaPlatform.Principal, viaPlatform.MerchantID = platform, "mer_1"
	replay, err := svc.Create(ctx, viaPlatform)
	if err != nil || !replay.Replayed || replay.Payment.ID() != first.Payment.ID() {
		t.Errorf("the platform retrying mer_1's request: %+v, %v; want mer_1's replay", replay, err)
	}
}
