package sns_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/adapters/sns"
	"github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/turns"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// These tests run the whole relay — Postgres outbox, relay logic, SNS publisher —
// against a real SNS/SQS endpoint, and read what arrived from the subscribed queue.
// moto delivers about a hundred messages a second, so each test keeps to a few
// hundred at most.

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	awstest.Terminate()
	os.Exit(code)
}

// fixture is one test's outbox database and topic with its subscribed queue.
type fixture struct {
	pool  *pgxpool.Pool
	store *outboxstore.Store
	tq    *awstest.TopicQueue
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	pool := pgtest.New(t, paymentsmigrations.FS)
	return fixture{pool: pool, store: outboxstore.New(pool), tq: awstest.NewTopicQueue(t, awstest.QueueConfig{})}
}

func (f fixture) publisher() *sns.Publisher {
	return sns.NewPublisher(awssns.NewFromConfig(f.tq.Config), f.tq.TopicARN, sns.Config{InFlight: 4})
}

// insertEvents commits n PENDING rows whose payloads are CloudEvents documents
// padded with payloadBytes (roughly), oldest first, and returns their ids. The
// padding is an extension attribute, which the envelope's schema allows.
func (f fixture) insertEvents(t *testing.T, n, payloadBytes int) []uuid.UUID {
	t.Helper()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.New()
		ev := map[string]any{
			"specversion": "1.0", "id": ids[i].String(), "type": "payment.created",
			"source": "/payments", "subject": uuid.NewString(), "time": time.Now().UTC().Format(time.RFC3339Nano),
			"datacontenttype": "application/json", "dataschema": api.EventSchemaID("payment.created", "1"),
			"padding": strings.Repeat("x", payloadBytes),
			"data": map[string]any{"payment_id": uuid.NewString(), "amount": 1050, "currency": "BRL",
				"payer_id": "cus_1", "merchant_id": "mer_1"},
		}
		payload, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.pool.Exec(context.Background(), `
INSERT INTO outbox (id, type, aggregate_id, payload, created_at)
VALUES ($1, 'payment.created', gen_random_uuid(), $2, clock_timestamp())`, ids[i], payload)
		if err != nil {
			t.Fatalf("insert outbox row: %v", err)
		}
	}
	return ids
}

func (f fixture) status(t *testing.T, id uuid.UUID) (status string, attempts int) {
	t.Helper()
	err := f.pool.QueryRow(context.Background(), `SELECT status, attempts FROM outbox WHERE id = $1`, id).Scan(&status, &attempts)
	if err != nil {
		t.Fatal(err)
	}
	return status, attempts
}

func (f fixture) count(t *testing.T, status string) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE status = $1`, status).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// countDue counts the PENDING rows a claim would take now: those whose next
// attempt is due.
func (f fixture) countDue(t *testing.T) int {
	t.Helper()
	var n int
	err := f.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM outbox WHERE status = 'PENDING' AND next_attempt_at <= now()`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// run starts r until the test ends or the returned stop is called.
func run(t *testing.T, r *outbox.Relay) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var g errgroup.Group
	g.Go(func() error { return r.Run(ctx) })
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := g.Wait(); err != nil {
			t.Errorf("relay: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// idsOf returns the outbox id of every message, by its id attribute, and fails on
// a message that arrived twice or does not match its schema.
func idsOf(t *testing.T, msgs []sqstypes.Message) map[uuid.UUID]bool {
	t.Helper()
	got := map[uuid.UUID]bool{}
	for _, m := range msgs {
		id, err := uuid.Parse(aws.ToString(m.MessageAttributes["id"].StringValue))
		if err != nil {
			t.Fatalf("message without a valid id attribute: %v", err)
		}
		if got[id] {
			t.Errorf("message %s arrived twice", id)
		}
		got[id] = true
		checkEvent(t, m)
	}
	return got
}

func TestEventReachesQueueVerbatim(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.insertEvents(t, 1, 10)[0]
	run(t, outbox.NewRelay(f.store, f.publisher(), logtest.Discard(), nil, time.Now,
		outbox.Config{PollInterval: 20 * time.Millisecond}))

	msgs := f.tq.Drain(t, f.tq.QueueURL, 1, 30*time.Second)
	if len(msgs) != 1 {
		t.Fatalf("got %d messages, want 1", len(msgs))
	}
	var stored string
	if err := f.pool.QueryRow(context.Background(), `SELECT payload::text FROM outbox WHERE id = $1`, id).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	m := msgs[0]
	checkEvent(t, m)
	if got := aws.ToString(m.Body); got != stored {
		t.Errorf("got body\n%s\nwant the stored payload verbatim\n%s", got, stored)
	}
	var ev struct{ ID, Type, SpecVersion string }
	if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &ev); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	if ev.ID != id.String() || ev.Type != "payment.created" || ev.SpecVersion != "1.0" {
		t.Errorf("got CloudEvent id=%s type=%s specversion=%s, want %s payment.created 1.0", ev.ID, ev.Type, ev.SpecVersion, id)
	}
	attrs := map[string]string{}
	for k, v := range m.MessageAttributes {
		attrs[k] = aws.ToString(v.StringValue)
		if aws.ToString(v.DataType) != "String" {
			t.Errorf("attribute %s: got data type %s, want String", k, aws.ToString(v.DataType))
		}
	}
	if attrs["id"] != id.String() || attrs["type"] != "payment.created" {
		t.Errorf("got attributes %v, want id=%s type=payment.created", attrs, id)
	}
	waitFor(t, 10*time.Second, "row PUBLISHED", func() bool { s, _ := f.status(t, id); return s == "PUBLISHED" })
}

// TestQueueGetsTheEncodersBytes writes a payment and a refund through the
// write side (paymentstore) and reads what the relay published from the
// queue: each body is, byte for byte, what the producer's encoder made of the
// event. The bytes are what a consumer hashes, signs or compares, so the
// outbox must hand them on, not a re-rendering of them. The payer id holds
// what a JSON store would rewrite: characters the encoder escapes (<, >, &)
// and one it does not (ü).
func TestQueueGetsTheEncodersBytes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	svc := payments.NewService(paymentstore.New(f.pool), time.Now, func() string { return uuid.Must(uuid.NewV7()).String() }, payments.Config{})
	platform := access.PlatformPrincipal("platkey")
	created, err := svc.Create(ctx, payments.CreatePayment{Principal: platform, Amount: 1050, Currency: "BRL", PayerID: "cus_<ü>&", MerchantID: "mer_1"})
	if err != nil {
		t.Fatal(err)
	}
	p := created.Payment
	refunded, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: p.ID(), Amount: 300})
	if err != nil {
		t.Fatal(err)
	}
	r := refunded.Refund
	total, err := payment.NewMoney(refunded.Payment.RefundedMinor(), p.Amount().Currency())
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]payment.Event{ // by type: the write recorded one of each
		payment.TypeCreated: payment.Created{PaymentID: p.ID(), Amount: p.Amount(), PayerID: p.PayerID(), MerchantID: p.MerchantID(), At: p.CreatedAt()},
		payment.TypeRefunded: payment.Refunded{PaymentID: p.ID(), RefundID: r.ID, Amount: r.Amount, RefundedTotal: total,
			PayerID: p.PayerID(), MerchantID: p.MerchantID(), At: r.CreatedAt},
	}

	run(t, outbox.NewRelay(f.store, f.publisher(), logtest.Discard(), nil, time.Now,
		outbox.Config{PollInterval: 20 * time.Millisecond}))
	msgs := f.tq.Drain(t, f.tq.QueueURL, len(events), 30*time.Second)
	if len(msgs) != len(events) {
		t.Fatalf("got %d messages, want %d", len(msgs), len(events))
	}
	for _, m := range msgs {
		id, typ := aws.ToString(m.MessageAttributes["id"].StringValue), aws.ToString(m.MessageAttributes["type"].StringValue)
		e, ok := events[typ]
		if !ok {
			t.Fatalf("message %s of type %q: the write recorded none", id, typ)
		}
		delete(events, typ)
		want, err := payments.EncodeEvent(id, e, payments.TraceContext{})
		if err != nil {
			t.Fatal(err)
		}
		if got := aws.ToString(m.Body); got != string(want) {
			t.Errorf("%s: the queue got\n%s\nwant the encoder's bytes\n%s", typ, got, want)
		}
	}
}

// TestBrokerOutageLosesNothing points a relay at a closed port first: the rows
// stay PENDING with their failed attempts counted. A relay that can reach the
// broker then publishes every one of them.
func TestBrokerOutageLosesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const rows = 30
	ids := f.insertEvents(t, rows, 10)

	down := awssns.NewFromConfig(f.tq.Config, func(o *awssns.Options) {
		o.BaseEndpoint = aws.String("http://127.0.0.1:1") // nothing listens on port 1
		o.RetryMaxAttempts = 1
	})
	cfg := outbox.Config{BatchSize: 100, MaxAttempts: 100, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond}
	broken := outbox.NewRelay(f.store, sns.NewPublisher(down, f.tq.TopicARN, sns.Config{InFlight: 4}), logtest.Discard(), nil, time.Now, cfg)
	for attempt := 1; attempt <= 2; attempt++ {
		// Step only once every row is due again: a step that found some rows
		// still in their backoff would claim the others alone and charge them
		// an attempt more than the rest.
		waitFor(t, 10*time.Second, "rows due again", func() bool { return f.countDue(t) == rows })
		if n, err := broken.Step(context.Background()); err != nil || n != rows {
			t.Fatalf("attempt %d: claimed %d rows (err %v), want all %d", attempt, n, err, rows)
		}
	}
	for _, id := range ids {
		if s, a := f.status(t, id); s != "PENDING" || a != 2 {
			t.Fatalf("row %s during the outage: got %s attempts=%d, want PENDING attempts=2", id, s, a)
		}
	}

	run(t, outbox.NewRelay(f.store, f.publisher(), logtest.Discard(), nil, time.Now, cfg))
	got := idsOf(t, f.tq.Drain(t, f.tq.QueueURL, rows, time.Minute))
	for _, id := range ids {
		if !got[id] {
			t.Errorf("row %s never reached the queue", id)
		}
	}
	waitFor(t, 10*time.Second, "all rows PUBLISHED", func() bool { return f.count(t, "PUBLISHED") == rows })
}

// TestReplicasShareTheOutbox runs three relays, as three replicas would, over one
// outbox, each as cmd/payments runs it by default (one claim at work in the
// database at a time): every row reaches the queue once.
func TestReplicasShareTheOutbox(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const rows = 300
	ids := f.insertEvents(t, rows, 10)
	for range 3 {
		pool, err := pgxpool.New(context.Background(), f.pool.Config().ConnString())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		cfg := outbox.Config{BatchSize: 20, Workers: 2, PollInterval: 20 * time.Millisecond}
		run(t, outbox.NewRelay(turns.NewLimiter(1).Store(outboxstore.New(pool)), f.publisher(), logtest.Discard(), nil, time.Now, cfg))
	}
	got := idsOf(t, f.tq.Drain(t, f.tq.QueueURL, rows, 90*time.Second))
	if len(got) != rows {
		t.Errorf("got %d distinct messages, want %d", len(got), rows)
	}
	for _, id := range ids {
		if !got[id] {
			t.Errorf("row %s never reached the queue", id)
		}
	}
	waitFor(t, 10*time.Second, "all rows PUBLISHED", func() bool { return f.count(t, "PUBLISHED") == rows })
}

// TestOversizedEventGoesDeadWithoutBlocking commits an event SNS can never accept
// in front of ordinary ones: it becomes DEAD after the maximum attempts, the
// others flow past it meanwhile, and a requeue gives it a fresh set of attempts.
func TestOversizedEventGoesDeadWithoutBlocking(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	big := f.insertEvents(t, 1, 300*1024)[0]
	small := f.insertEvents(t, 20, 10)
	cfg := outbox.Config{BatchSize: 10, MaxAttempts: 3, PollInterval: 10 * time.Millisecond,
		BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}
	stop := run(t, outbox.NewRelay(f.store, f.publisher(), logtest.Discard(), nil, time.Now, cfg))

	got := idsOf(t, f.tq.Drain(t, f.tq.QueueURL, len(small), time.Minute))
	for _, id := range small {
		if !got[id] {
			t.Errorf("row %s behind the oversized one never reached the queue", id)
		}
	}
	waitFor(t, 30*time.Second, "oversized row DEAD", func() bool { s, _ := f.status(t, big); return s == "DEAD" })
	if _, a := f.status(t, big); a != 1 {
		t.Errorf("oversized row: got %d attempts, want 1: retrying cannot make it fit", a)
	}
	var lastErr string
	if err := f.pool.QueryRow(context.Background(), `SELECT last_error FROM outbox WHERE id = $1`, big).Scan(&lastErr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lastErr, "256 KiB") {
		t.Errorf("got last_error %q, want it to name the size limit", lastErr)
	}
	stop()

	if err := f.store.Requeue(context.Background(), big); err != nil {
		t.Fatalf("requeue: %v", err)
	}
	if s, a := f.status(t, big); s != "PENDING" || a != 0 {
		t.Errorf("after requeue: got %s attempts=%d, want PENDING attempts=0", s, a)
	}
	st, err := f.store.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 1 || st.Dead != 0 {
		t.Errorf("stats after requeue: got pending=%d dead=%d, want 1 and 0", st.Pending, st.Dead)
	}
}

// TestShutdownKeepsPublishedAcknowledged stops a relay in the middle of a
// backlog: every row it left PUBLISHED is in the queue, and the rest are PENDING
// for the next relay.
func TestShutdownKeepsPublishedAcknowledged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const rows = 100
	f.insertEvents(t, rows, 10)
	cfg := outbox.Config{BatchSize: 10, Workers: 2, PollInterval: 10 * time.Millisecond}
	stop := run(t, outbox.NewRelay(f.store, f.publisher(), logtest.Discard(), nil, time.Now, cfg))
	waitFor(t, 30*time.Second, "a first batch PUBLISHED", func() bool { return f.count(t, "PUBLISHED") > 0 })
	stop()

	published := map[uuid.UUID]bool{}
	rowsq, err := f.pool.Query(context.Background(), `SELECT id FROM outbox WHERE status = 'PUBLISHED'`)
	if err != nil {
		t.Fatal(err)
	}
	for rowsq.Next() {
		var id uuid.UUID
		if err := rowsq.Scan(&id); err != nil {
			t.Fatal(err)
		}
		published[id] = true
	}
	if err := rowsq.Err(); err != nil {
		t.Fatal(err)
	}
	if pending := f.count(t, "PENDING"); pending+len(published) != rows {
		t.Errorf("got %d PUBLISHED + %d PENDING, want %d rows in all", len(published), pending, rows)
	}
	got := idsOf(t, f.tq.Drain(t, f.tq.QueueURL, len(published), time.Minute))
	for id := range published {
		if !got[id] {
			t.Errorf("row %s is PUBLISHED but never reached the queue", id)
		}
	}
}
