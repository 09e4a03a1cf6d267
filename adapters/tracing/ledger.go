package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// LedgerStore is what the ledger's inbox writes through: the consumer's
// records and the processor's claims, each handing the ledger's handler
// its repository bound to them (ledgerstore.Store is one).
type LedgerStore interface {
	inbox.Recorder[ledgers.Ledger]
	inbox.Backlog[ledgers.Ledger]
}

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
	return tracedLedgerStore{store: store, tracer: Tracer(tp)}
}

type tracedLedgerStore struct {
	store  LedgerStore
	tracer trace.Tracer
}

func (s tracedLedgerStore) Record(ctx context.Context, msg inbox.Message, apply func(context.Context, ledgers.Ledger) (string, error)) (inserted bool, err error) {
	ctx, span := s.tracer.Start(ctx, "ledger transaction")
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "rolled back")
		}
		span.End()
	}()
	if apply == nil {
		return s.store.Record(ctx, msg, nil)
	}
	return s.store.Record(ctx, msg, func(ctx context.Context, l ledgers.Ledger) (string, error) {
		return apply(ctx, tracedLedger{Ledger: l, tracer: s.tracer})
	})
}

func (s tracedLedgerStore) ClaimPending(ctx context.Context, c inbox.Claim,
	fn func(context.Context, []inbox.PendingMessage, inbox.ApplyFunc[ledgers.Ledger]) (inbox.BatchResult, error)) (int, error) {
	return s.store.ClaimPending(ctx, c, func(ctx context.Context, rows []inbox.PendingMessage, apply inbox.ApplyFunc[ledgers.Ledger]) (inbox.BatchResult, error) {
		return fn(ctx, rows, func(ctx context.Context, ev inbox.Event, apply1 func(context.Context, ledgers.Ledger) error) error {
			parent := SpanContext(ev.TraceParent, ev.TraceState)
			if !parent.IsValid() {
				return apply(ctx, ev, apply1)
			}
			return apply(ctx, ev, func(ctx context.Context, l ledgers.Ledger) error {
				return apply1(ctx, tracedLedger{Ledger: l, tracer: s.tracer, parent: parent})
			})
		})
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
	if l.parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, l.parent)
	}
	ctx, span := l.tracer.Start(ctx, "post ledger transaction")
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "not posted")
		}
		span.End()
	}()
	return l.Ledger.Post(ctx, tx, postedAt)
}
