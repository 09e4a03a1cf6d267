package tracing_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
	"github.com/payments-outbox/payments-outbox/adapters/ledgertracing"
	"github.com/payments-outbox/payments-outbox/adapters/paymentsapi"
	"github.com/payments-outbox/payments-outbox/adapters/paymentstracing"
	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/adapters/sns"
	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	awstest.Terminate()
	os.Exit(code)
}

// service is one service's tracer provider, recording every span it ends.
type service struct {
	tp  *sdktrace.TracerProvider
	rec *tracetest.SpanRecorder
}

func newService(t *testing.T, name string) service {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", name))))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return service{tp: tp, rec: rec}
}

// span returns the one ended span named name, failing the test if there is
// not exactly one.
func (s service) span(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, sp := range s.rec.Ended() {
		if sp.Name() == name {
			found = append(found, sp)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1; the spans: %s", len(found), name, names(s.rec.Ended()))
	}
	return found[0]
}

func (s service) has(name string) bool {
	for _, sp := range s.rec.Ended() {
		if sp.Name() == name {
			return true
		}
	}
	return false
}

func names(spans []sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	for _, sp := range spans {
		b.WriteString(sp.Name() + " ")
	}
	return b.String()
}

// openTraced migrates a fresh database and opens a pool whose statements
// are traced with tp, as the binaries do.
func openTraced(t *testing.T, fsys interface{ ReadFile(string) ([]byte, error) }, migrate func(context.Context, *pgxpool.Pool) error, tp trace.TracerProvider) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := postgres.Open(ctx, pgtest.NewDatabase(t), postgres.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

type merchantKey struct{}

func (merchantKey) Authenticate(context.Context, string) (access.Principal, error) {
	return access.MerchantPrincipal("key_1", "mer_1"), nil
}

// TestOneTraceFromRequestToLedgerCommit sends one POST /payments through the
// payments API, the real relay and SNS, SQS and the ledger's consumer, each
// service tracing to its own in-memory recorder, and checks the one trace
// they make together:
//
//	payments: POST /payments ├→ create payment (→ its statements)
//	                         ├→ publish payment.created  ⇢ link: outbox claim (a trace of its own)
//	ledger:                  └→ process payment.created → ledger transaction → post ledger transaction
//
// and that the outbox row, the event and the inbox row keep that trace: the
// context of the request, which the use case read when it encoded the event.
func TestOneTraceFromRequestToLedgerCommit(t *testing.T) {
	ctx := context.Background()
	log := logtest.Discard()
	pay, led := newService(t, "payments"), newService(t, "ledger")
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{})

	payDB := openTraced(t, paymentsmigrations.FS, func(ctx context.Context, p *pgxpool.Pool) error {
		_, err := postgres.Migrate(ctx, p, paymentsmigrations.FS)
		return err
	}, pay.tp)
	ledDB := openTraced(t, ledgermigrations.FS, func(ctx context.Context, p *pgxpool.Pool) error {
		_, err := postgres.Migrate(ctx, p, ledgermigrations.FS)
		return err
	}, led.tp)

	// The payments service: its API and its relay.
	svc := payments.NewService(paymentstracing.Repository(paymentstore.New(payDB), pay.tp), time.Now,
		func() string { return uuid.Must(uuid.NewV7()).String() }, payments.Config{TraceContext: paymentstracing.TraceContext})
	api := httptest.NewServer(paymentsapi.NewHandler(svc, merchantKey{}, log, nil, paymentsapi.Config{TracerProvider: pay.tp}))
	defer api.Close()
	r := outbox.NewRelay(tracing.Relay(outboxstore.New(payDB), pay.tp, "payments-events"),
		sns.NewPublisher(awssns.NewFromConfig(tq.Config), tq.TopicARN, sns.Config{InFlight: 1}), log, nil, time.Now,
		outbox.Config{Workers: 1, PollInterval: 50 * time.Millisecond})

	// The ledger: its consumer.
	schemas, err := eventschema.New()
	if err != nil {
		t.Fatal(err)
	}
	store := ledgertracing.Traced(ledgerstore.New(ledDB), led.tp)
	proc := inbox.NewProcessor(store, ledgers.Handler{}, schemas, log, nil, time.Now, inbox.ProcessorConfig{})
	consumer := sqs.NewConsumer(tq.SQS, inbox.NewService(store, proc, time.Now, inbox.Config{}), tq.QueueURL, log, sqs.NewMetrics(prometheus.NewRegistry(), "ledger"), time.Now, sqs.Config{
		Workers: 1, WaitTime: time.Second, TracerProvider: led.tp,
	})

	runCtx, stop := context.WithCancel(ctx)
	var g errgroup.Group
	g.Go(func() error { return r.Run(runCtx) })
	g.Go(func() error { return consumer.Run(runCtx) })
	stopped := false
	halt := func() {
		if !stopped {
			stopped = true
			stop()
			_ = g.Wait()
		}
	}
	defer halt()

	req, err := http.NewRequest(http.MethodPost, api.URL+"/payments",
		strings.NewReader(`{"amount": 1050, "currency": "BRL", "payer_id": "cus_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer any")
	// Through the client that holds every exchange to the API's document,
	// which must give the traceparent header.
	res, err := apitest.New(t, apidoc.Payments()).Client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID string }
	err = json.NewDecoder(res.Body).Decode(&created)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("POST /payments: %d, %v", res.StatusCode, err)
	}
	header := res.Header.Get(tracing.TraceParent)
	traceID := tracing.SpanContext(header, "").TraceID()
	if !traceID.IsValid() {
		t.Fatalf("the response's traceparent is %q, want the request's trace context", header)
	}

	// Poll (never sleep) until the ledger has posted the event and the
	// relay's batch span has ended.
	deadline := time.Now().Add(30 * time.Second)
	for !led.has("post ledger transaction") || !pay.has("outbox claim") {
		if time.Now().After(deadline) {
			t.Fatalf("no complete trace after 30s; payments spans: %s; ledger spans: %s", names(pay.rec.Ended()), names(led.rec.Ended()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	halt() // every span ended: nothing is recording any more

	httpSpan := pay.span(t, "POST /payments")
	write := pay.span(t, "create payment")
	claim := pay.span(t, "outbox claim")
	publish := pay.span(t, "publish payment.created")
	process := led.span(t, "process payment.created")
	ledgerTx := led.span(t, "ledger transaction")
	post := led.span(t, "post ledger transaction")

	if httpSpan.SpanContext().TraceID() != traceID || httpSpan.SpanKind() != trace.SpanKindServer {
		t.Errorf("POST /payments: trace %s kind %s, want the response's trace %s, a server span", httpSpan.SpanContext().TraceID(), httpSpan.SpanKind(), traceID)
	}
	childOf(t, write, httpSpan)
	var statements int
	for _, sp := range pay.rec.Ended() {
		if sp.Parent().SpanID() == write.SpanContext().SpanID() {
			statements++
		}
	}
	if statements == 0 {
		t.Errorf("no pgx span under %q: the write's statements are not traced", write.Name())
	}

	// The relay's batch is a trace of its own, linked to the row's context;
	// the publish is in the request's trace, under the request, linked back.
	if claim.Parent().IsValid() || claim.SpanContext().TraceID() == traceID {
		t.Errorf("outbox claim: parent %v, trace %s; want a root span in a trace of its own", claim.Parent(), claim.SpanContext().TraceID())
	}
	if !linksTo(claim, httpSpan.SpanContext()) {
		t.Errorf("outbox claim links %v, want a link to the request's span %s", claim.Links(), httpSpan.SpanContext().SpanID())
	}
	childOf(t, publish, httpSpan)
	if publish.SpanKind() != trace.SpanKindProducer || !linksTo(publish, claim.SpanContext()) {
		t.Errorf("publish: kind %s links %v; want a producer span linked to the batch", publish.SpanKind(), publish.Links())
	}

	// The ledger continues the trace from the message: its processing is a
	// child of the context the write stored, in another service.
	childOf(t, process, httpSpan)
	if !process.Parent().IsRemote() || process.SpanKind() != trace.SpanKindConsumer {
		t.Errorf("process: remote parent %t kind %s; want a consumer span whose parent came with the message", process.Parent().IsRemote(), process.SpanKind())
	}
	childOf(t, ledgerTx, process)
	childOf(t, post, ledgerTx)
	for _, sp := range led.rec.Ended() {
		if sp.Name() != "outbox claim" && sp.SpanContext().TraceID() != traceID {
			t.Errorf("ledger span %q is in trace %s, want %s", sp.Name(), sp.SpanContext().TraceID(), traceID)
		}
	}
	for svc, spans := range map[string][]sdktrace.ReadOnlySpan{"payments": pay.rec.Ended(), "ledger": led.rec.Ended()} {
		for _, sp := range spans {
			if got := serviceName(sp); got != svc {
				t.Errorf("span %q says service %q, want %q", sp.Name(), got, svc)
			}
		}
	}

	// What the rows keep.
	want := "00-" + traceID.String() + "-" + httpSpan.SpanContext().SpanID().String() + "-01"
	var stored, inEvent string
	if err := payDB.QueryRow(ctx, `SELECT traceparent, payload->>'traceparent' FROM outbox`).Scan(&stored, &inEvent); err != nil {
		t.Fatal(err)
	}
	if stored != want || inEvent != want {
		t.Errorf("outbox traceparent %q, event's traceparent %q; want both %q", stored, inEvent, want)
	}
	var inboxTrace string
	if err := ledDB.QueryRow(ctx, `SELECT trace_id FROM inbox_messages`).Scan(&inboxTrace); err != nil {
		t.Fatal(err)
	}
	if inboxTrace != traceID.String() {
		t.Errorf("inbox trace_id %q, want %q", inboxTrace, traceID)
	}
}

func childOf(t *testing.T, child, parent sdktrace.ReadOnlySpan) {
	t.Helper()
	if child.Parent().SpanID() != parent.SpanContext().SpanID() || child.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("%q: parent %s in trace %s; want the child of %q (%s in trace %s)", child.Name(),
			child.Parent().SpanID(), child.SpanContext().TraceID(), parent.Name(), parent.SpanContext().SpanID(), parent.SpanContext().TraceID())
	}
}

func linksTo(s sdktrace.ReadOnlySpan, sc trace.SpanContext) bool {
	for _, l := range s.Links() {
		if l.SpanContext.TraceID() == sc.TraceID() && l.SpanContext.SpanID() == sc.SpanID() {
			return true
		}
	}
	return false
}

func serviceName(s sdktrace.ReadOnlySpan) string {
	v, _ := s.Resource().Set().Value("service.name")
	return v.AsString()
}
