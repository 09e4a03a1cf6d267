package paymentstracing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/paymentstracing"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/payments/paymentstest"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// TestPaymentsWriteSpans: each write through the decorated repository is one
// span named for it, with the payment's id, a child of the caller's span, in
// whose context the repository runs (its statements are the span's
// children); a failed write's span has an error status. The events carry the
// caller's trace context, read through TraceContext.
func TestPaymentsWriteSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	fake := paymentstest.NewFakeRepository()
	inner := &spanOfCall{Repository: fake}
	svc := payments.NewService(paymentstracing.Repository(inner, tp), time.Now, func() string { return uuid.NewString() },
		payments.Config{TraceContext: paymentstracing.TraceContext})
	platform := access.PlatformPrincipal("platkey")

	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	created, err := svc.Create(ctx, payments.CreatePayment{Principal: platform, Amount: 1000, Currency: "BRL", PayerID: "a", MerchantID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	id := created.Payment.ID()
	if _, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: id, Amount: 2000}); !errors.Is(err, payment.ErrRefundExceedsAmount) {
		t.Fatalf("over-refund: %v, want ErrRefundExceedsAmount", err)
	}
	request.End()

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	create, update := spans["create payment"], spans["update payment"]
	if create == nil || update == nil {
		t.Fatalf("spans %v, want create payment and update payment", names(rec.Ended()))
	}
	for _, s := range []sdktrace.ReadOnlySpan{create, update} {
		if s.Parent().SpanID() != request.SpanContext().SpanID() || !hasAttribute(s, attribute.String("payment.id", string(id))) {
			t.Errorf("%s: parent %s, attributes %v; want the request's child with payment.id %s", s.Name(), s.Parent().SpanID(), s.Attributes(), id)
		}
	}
	if create.Status().Code == codes.Error || update.Status().Code != codes.Error {
		t.Errorf("statuses: create %v, update %v; want the failed update's an error only", create.Status(), update.Status())
	}
	if len(inner.spans) != 2 || inner.spans[0] != create.SpanContext().SpanID() || inner.spans[1] != update.SpanContext().SpanID() {
		t.Errorf("the repository ran in spans %v, want each write's own (%s, %s)", inner.spans, create.SpanContext().SpanID(), update.SpanContext().SpanID())
	}

	msgs := fake.Outbox()
	want := paymentstracing.TraceContext(ctx)
	if want.Parent == "" || len(msgs) != 1 || msgs[0].TraceParent != want.Parent || msgs[0].TraceState != want.State {
		t.Errorf("outbox %+v, want one message carrying the request's trace context %+v", msgs, want)
	}
	if untraced := paymentstracing.TraceContext(context.Background()); untraced != (payments.TraceContext{}) {
		t.Errorf("the trace context of an untraced call is %+v, want none", untraced)
	}
}

func TestPaymentsWithoutTracingIsTheRepository(t *testing.T) {
	repo := paymentstest.NewFakeRepository()
	if got := paymentstracing.Repository(repo, nil); got != payments.Repository(repo) {
		t.Errorf("with a nil provider the decorator returned %T, want the repository itself", got)
	}
}

// spanOfCall records the span in the context of each write it is called
// with: where the repository's statements would be traced.
type spanOfCall struct {
	payments.Repository
	spans []trace.SpanID
}

func (r *spanOfCall) Create(ctx context.Context, p *payment.Payment, msgs []outbox.Message, key *idempotency.Key) (payments.Committed, error) {
	r.spans = append(r.spans, trace.SpanContextFromContext(ctx).SpanID())
	return r.Repository.Create(ctx, p, msgs, key)
}

func (r *spanOfCall) Update(ctx context.Context, id payment.ID, key *idempotency.Key, fn func(*payment.Payment) (payments.Change, error)) (payments.Committed, error) {
	r.spans = append(r.spans, trace.SpanContextFromContext(ctx).SpanID())
	return r.Repository.Update(ctx, id, key, fn)
}

func hasAttribute(s sdktrace.ReadOnlySpan, want attribute.KeyValue) bool {
	for _, kv := range s.Attributes() {
		if kv == want {
			return true
		}
	}
	return false
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	out := make([]string, 0, len(spans))
	for _, sp := range spans {
		out = append(out, sp.Name())
	}
	return out
}
