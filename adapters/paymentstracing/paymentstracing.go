// Package paymentstracing traces the payments service's ports: a decorator
// of its repository, beside the service it decorates (the shared mechanics
// are adapters/tracing's), so that the store starts no span of its own; and
// the trace context each event of a write carries.
package paymentstracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// Repository returns repo with each write traced as one span, "create payment"
// or "update payment", carrying the payment's id: a child of the span in
// the call's context, covering the write's transaction, whose statements
// (otelpgx) are its children. A write that fails or rolls back ends its span
// with an error status. Reads pass through untraced. The repository stays
// unaware of tracing. With a nil tp repo is returned as it is.
func Repository(repo payments.Repository, tp trace.TracerProvider) payments.Repository {
	if tp == nil {
		return repo
	}
	return tracedPayments{Repository: repo, tracer: tracing.Tracer(tp)}
}

// tracedPayments traces Create and Update; Get passes through.
type tracedPayments struct {
	payments.Repository
	tracer trace.Tracer
}

func (r tracedPayments) Create(ctx context.Context, p *payment.Payment, msgs []outbox.Message, key *idempotency.Key) (payments.Committed, error) {
	ctx, span := r.start(ctx, "create payment", p.ID())
	c, err := r.Repository.Create(ctx, p, msgs, key)
	tracing.End(span, err, "rolled back")
	return c, err
}

func (r tracedPayments) Update(ctx context.Context, id payment.ID, key *idempotency.Key, fn func(*payment.Payment) (payments.Change, error)) (payments.Committed, error) {
	ctx, span := r.start(ctx, "update payment", id)
	c, err := r.Repository.Update(ctx, id, key, fn)
	tracing.End(span, err, "rolled back")
	return c, err
}

func (r tracedPayments) start(ctx context.Context, name string, id payment.ID) (context.Context, trace.Span) {
	return r.tracer.Start(ctx, name, trace.WithAttributes(attribute.String("payment.id", string(id))))
}

// TraceContext implements payments.TraceContextFunc: the trace
// context of the span in ctx — with tracing on, the request's — which each
// event of the write carries and each of its outbox rows stores. It is the
// zero TraceContext when ctx carries no span.
func TraceContext(ctx context.Context) payments.TraceContext {
	parent, state := tracing.Inject(ctx)
	return payments.TraceContext{Parent: parent, State: state}
}

var _ payments.TraceContextFunc = TraceContext
