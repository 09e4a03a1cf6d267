package ledgertracing_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
	"github.com/payments-outbox/payments-outbox/adapters/ledgertracing"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/ledgers/ledgerstest"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// eventParent is the trace context a stored event carries in the tests
// below: the write that recorded its payment.
const eventParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func transfer(t *testing.T) ledger.Transaction {
	t.Helper()
	d, _ := ledgers.PostingsOf("payment")
	tx, err := ledger.NewTransfer(ledger.Posting{MessageID: uuid.NewString(), PaymentID: uuid.NewString(),
		Payer: "cus_1", Merchant: "mer_1", Amount: 100, Currency: "BRL", OccurredAt: time.Now()}, d)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// message is a new pending inbox message of a type the ledger applies.
func message() inbox.Message {
	return inbox.Message{ID: uuid.NewString(), Type: ledgers.TypePaymentCreated, Payload: []byte(`{}`), ReceivedAt: time.Now()}
}

func ended(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// TestLedgerTracesTheConsumersTransactions: each transaction is a span under
// the caller's, each posting in it a span under the transaction, and a
// transaction that rolled back says so.
func TestLedgerTracesTheConsumersTransactions(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	store := ledgertracing.Traced(ledgerstest.NewFakeStore(), tp)
	ctx, process := tp.Tracer("test").Start(context.Background(), "process payment.created")

	_, err := store.Record(ctx, message(), func(ctx context.Context, l ledgers.Ledger) (string, error) {
		_, err := l.Post(ctx, transfer(t), time.Now())
		return "", err
	})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if _, err := store.Record(ctx, message(), func(context.Context, ledgers.Ledger) (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v, want %v", err, boom)
	}
	process.End()

	txs, posts := ended(rec, "ledger transaction"), ended(rec, "post ledger transaction")
	if len(txs) != 2 || len(posts) != 1 {
		t.Fatalf("got %d transactions and %d postings traced, want 2 and 1", len(txs), len(posts))
	}
	for _, tx := range txs {
		if tx.Parent().SpanID() != process.SpanContext().SpanID() {
			t.Errorf("ledger transaction: parent %s, want the caller's span %s", tx.Parent().SpanID(), process.SpanContext().SpanID())
		}
	}
	if posts[0].Parent().SpanID() != txs[0].SpanContext().SpanID() {
		t.Errorf("post ledger transaction: parent %s, want its transaction %s", posts[0].Parent().SpanID(), txs[0].SpanContext().SpanID())
	}
	if txs[0].Status().Code == codes.Error || txs[1].Status().Code != codes.Error {
		t.Errorf("statuses: committed %v, rolled back %v; want only the rolled-back one an error", txs[0].Status(), txs[1].Status())
	}
}

// TestLedgerContinuesEachClaimedEventsTrace: in a claim, a posting is the
// child of the trace context its row's event carries, and the posting of a
// row whose event carries none is not traced.
func TestLedgerContinuesEachClaimedEventsTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	fake := ledgerstest.NewFakeStore()
	store := ledgertracing.Traced(fake, tp)
	for range 2 {
		if _, err := fake.Record(context.Background(), message(), nil); err != nil {
			t.Fatal(err)
		}
	}
	c := inbox.Claim{Limit: 10, Types: []string{ledgers.TypePaymentCreated}}
	_, err := store.ClaimPending(context.Background(), c, func(ctx context.Context, rows []inbox.PendingMessage, apply inbox.ApplyFunc[ledgers.Ledger]) (inbox.BatchResult, error) {
		for i, ev := range []inbox.Event{{ID: rows[0].ID, TraceParent: eventParent}, {ID: rows[1].ID}} {
			err := apply(ctx, ev, func(ctx context.Context, l ledgers.Ledger) error {
				_, err := l.Post(ctx, transfer(t), time.Now())
				return err
			})
			if err != nil {
				return inbox.BatchResult{}, fmt.Errorf("row %d: %w", i, err)
			}
		}
		return inbox.BatchResult{At: time.Now(), Processed: []inbox.Processed{{ID: rows[0].ID}, {ID: rows[1].ID}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	posts := ended(rec, "post ledger transaction")
	want := tracing.SpanContext(eventParent, "")
	if len(posts) != 1 || posts[0].SpanContext().TraceID() != want.TraceID() || posts[0].Parent().SpanID() != want.SpanID() || !posts[0].Parent().IsRemote() {
		t.Fatalf("postings traced: %d %v; want one, the child of the event's context %s", len(posts), posts, want.SpanID())
	}
	if n := len(fake.Transactions()); n != 2 {
		t.Errorf("posted %d, want both rows: tracing changes nothing of what is written", n)
	}
}

// TestProcessorContinuesTheEventsTrace: in the async mode the processor's
// posting, made later in another transaction, continues the trace of the
// write that recorded the payment: the child of the context the stored
// event carries, on the Postgres store, through the real processor. A row
// whose event carries none makes no span (it would start a trace of its own
// per row).
func TestProcessorContinuesTheEventsTrace(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	pool := pgtest.New(t, ledgermigrations.FS)
	schemas, err := eventschema.New()
	if err != nil {
		t.Fatal(err)
	}
	store := ledgertracing.Traced(ledgerstore.New(pool), tp)
	proc := inbox.NewProcessor(store, ledgers.Handler{}, schemas, logtest.Discard(), nil, time.Now, inbox.ProcessorConfig{})
	recorder := inbox.NewService(store, proc, time.Now, inbox.Config{Mode: inbox.Async})

	ctx := context.Background()
	created := func(amount int) []byte {
		payment := uuid.NewString()
		return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":%q,"amount":%d,"currency":"BRL","payer_id":"cus_p","merchant_id":"mer_p"}}`,
			uuid.NewString(), payment, time.Now().UTC().Format(time.RFC3339Nano), payment, amount))
	}
	traced := bytes.Replace(created(100), []byte(`{`), []byte(`{"traceparent":"`+eventParent+`",`), 1)
	for _, body := range [][]byte{traced, created(200)} {
		if res, err := recorder.Receive(ctx, body); err != nil || res.Disposition != inbox.Recorded {
			t.Fatalf("Receive: %v, %v; want recorded", res.Disposition, err)
		}
	}
	for {
		n, err := proc.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	merchant, _ := ledger.MerchantAccount("mer_p")
	if bs, err := ledgerstore.New(pool).Balances(ctx, merchant); err != nil || len(bs) != 1 || bs[0].Amount() != 300 {
		t.Fatalf("mer_p balances %v, %v after the processor, want 300: both rows applied", bs, err)
	}

	var posts []sdktrace.ReadOnlySpan
	for _, s := range ended(rec, "post ledger transaction") {
		if !s.Parent().Equal(trace.SpanContext{}) && s.Parent().IsRemote() {
			posts = append(posts, s)
		}
	}
	want := tracing.SpanContext(eventParent, "")
	if len(posts) != 1 || posts[0].SpanContext().TraceID() != want.TraceID() || posts[0].Parent().SpanID() != want.SpanID() {
		t.Fatalf("processor postings traced: %d %v; want one, the child of the stored event's context %s", len(posts), posts, want.SpanID())
	}
	if n := len(ended(rec, "post ledger transaction")); n != 1 {
		t.Errorf("%d postings traced in all, want 1: the row without a trace context makes none", n)
	}
}
