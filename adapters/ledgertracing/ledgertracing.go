// Package ledgertracing traces the ledger's ports: a decorator of its inbox
// store, beside the service it decorates (the shared mechanics are
// adapters/tracing's), so that the store starts no span of its own.
package ledgertracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// Store is what the ledger's inbox writes through (ledgerstore.Store is
// one).
type Store = tracing.InboxStore[ledgers.Ledger]

// Traced returns store with the ledger's writes traced; the inbox, the
// ledger's handler and the store stay unaware of tracing. It records:
//
//   - "ledger transaction": each transaction of the consumer (Record), a
//     child of the span in the caller's context — the consumer's processing
//     span, which continues the producer's trace — with an error status when
//     it rolled back. The statements sent in it are its children.
//   - "post ledger transaction": each posting (ledgers.Ledger.Post), a
//     child of its transaction; in the processor's claims, a child of the
//     trace context the claimed row's event carries (the write that recorded
//     the payment), so a posting made later, in another transaction or
//     process, continues the trace that wrote it. The posting of a row whose
//     event carries none makes no span: it would start a trace of its own per
//     row.
//
// With a nil tp store is returned as it is.
func Traced(store Store, tp trace.TracerProvider) Store {
	return tracing.Inbox(store, tp, "ledger transaction", func(l ledgers.Ledger, tracer trace.Tracer, parent trace.SpanContext) ledgers.Ledger {
		return tracedLedger{Ledger: l, tracer: tracer, parent: parent}
	})
}

// tracedLedger traces Post as "post ledger transaction", a child of parent
// when it is valid (a claimed row's event), else of the span in ctx.
type tracedLedger struct {
	ledgers.Ledger
	tracer trace.Tracer
	parent trace.SpanContext
}

func (l tracedLedger) Post(ctx context.Context, tx ledger.Transaction, postedAt time.Time) (posted bool, err error) {
	ctx, span := tracing.StartChild(ctx, l.tracer, l.parent, "post ledger transaction")
	defer func() { tracing.End(span, err, "not posted") }()
	return l.Ledger.Post(ctx, tx, postedAt)
}
