package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// LedgerStore is what the ledger's inbox writes through (ledgerstore.Store
// is one).
type LedgerStore = InboxStore[ledgers.Ledger]

// Ledger returns store with the ledger's writes traced; the inbox, the
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
func Ledger(store LedgerStore, tp trace.TracerProvider) LedgerStore {
	if tp == nil {
		return store
	}
	return tracedInbox[ledgers.Ledger]{store: store, tracer: Tracer(tp), transaction: "ledger transaction",
		traced: func(l ledgers.Ledger, tracer trace.Tracer, parent trace.SpanContext) ledgers.Ledger {
			return tracedLedger{Ledger: l, tracer: tracer, parent: parent}
		}}
}

// tracedLedger traces Post as "post ledger transaction", a child of parent
// when it is valid (a claimed row's event), else of the span in ctx.
type tracedLedger struct {
	ledgers.Ledger
	tracer trace.Tracer
	parent trace.SpanContext
}

func (l tracedLedger) Post(ctx context.Context, tx ledger.Transaction, postedAt time.Time) (posted bool, err error) {
	ctx, span := startChild(ctx, l.tracer, l.parent, "post ledger transaction")
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "not posted")
		}
		span.End()
	}()
	return l.Ledger.Post(ctx, tx, postedAt)
}
