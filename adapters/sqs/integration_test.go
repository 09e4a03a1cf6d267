package sqs_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/provenance"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// TestMain stops the Postgres container pgtest may start. awstest.Main cannot
// be chained with it (both run m.Run), so a LocalStack container, when one
// is started, is left to the testcontainers reaper.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// rig is one test's consumer: its own queue, DLQ, topic and database.
type rig struct {
	tq   *awstest.TopicQueue
	pool *pgxpool.Pool
	svc  books
	reg  *prometheus.Registry
	m    *sqs.Metrics
	// handler is what the consumer applies messages with: r.svc (the sync
	// inbox) unless a test sets another.
	handler sqs.Handler
	// verifier, when a test sets it, checks each message's signature.
	verifier *provenance.Verifier
	cancel   context.CancelFunc
	done     chan error
}

func newRig(t *testing.T, queue awstest.QueueConfig) *rig {
	t.Helper()
	tq := awstest.NewTopicQueue(t, queue)
	pool := pgtest.New(t, ledgermigrations.FS)
	store := ledgerstore.New(pool)
	reg := prometheus.NewRegistry()
	return &rig{tq: tq, pool: pool, svc: newBooks(t, store), reg: reg, m: sqs.NewMetrics(reg, "ledger")}
}

// books is the ledger as cmd/ledger wires it on a store: the shared inbox
// with the ledger's handler, in each mode, and the ledger's queries.
type books struct {
	*ledgers.Service
	sync, async *inbox.Service[ledgers.Ledger, ledgers.Instruction]
	proc        *inbox.Processor[ledgers.Ledger, ledgers.Instruction]
}

func newBooks(t testing.TB, store *ledgerstore.Store) books {
	proc := inbox.NewProcessor(store, ledgers.Handler{}, schemas(t), logtest.Discard(), nil, time.Now, inbox.ProcessorConfig{})
	return books{Service: ledgers.NewService(store), proc: proc,
		sync:  inbox.NewService(store, proc, time.Now, inbox.Config{Mode: inbox.Sync}),
		async: inbox.NewService(store, proc, time.Now, inbox.Config{Mode: inbox.Async})}
}

// start runs a consumer of the rig's queue until the test ends (or stop).
func (r *rig) start(t *testing.T, api sqs.API, workers int) {
	t.Helper()
	attrs, err := sqs.ReadQueueAttributes(context.Background(), api, r.tq.QueueURL)
	if err != nil {
		t.Fatal(err)
	}
	var h sqs.Handler = r.svc.sync
	if r.handler != nil {
		h = r.handler
	}
	c := sqs.NewConsumer(api, h, r.tq.QueueURL, logtest.Discard(), r.m, time.Now, sqs.Config{
		Workers: workers, WaitTime: 2 * time.Second,
		VisibilityTimeout: attrs.VisibilityTimeout, Verifier: r.verifier, DLQURL: r.tq.DLQURL,
	})
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() { r.done <- c.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
}

func (r *rig) stop(t *testing.T) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	if err := <-r.done; err != nil {
		t.Errorf("consumer: %v", err)
	}
	r.cancel = nil
}

func (r *rig) metric(t *testing.T, name string, labels ...string) float64 {
	return metricValue(t, r.reg, name, labels...)
}

func (r *rig) ledgerTransactions(t *testing.T) int {
	var n int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM ledger_transactions`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// send puts bodies straight on a queue, 10 per request.
func send(t *testing.T, client *awssqs.Client, queueURL string, bodies ...[]byte) {
	t.Helper()
	for len(bodies) > 0 {
		n := min(10, len(bodies))
		if err := sendTo(client, queueURL, bodies[:n]); err != nil {
			t.Fatal(err)
		}
		bodies = bodies[n:]
	}
}

func sendBatch(tq *awstest.TopicQueue, bodies [][]byte) error {
	return sendTo(tq.SQS, tq.QueueURL, bodies)
}

func sendTo(client *awssqs.Client, queueURL string, bodies [][]byte) error {
	entries := make([]types.SendMessageBatchRequestEntry, len(bodies))
	for i, b := range bodies {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(b))}
	}
	out, err := client.SendMessageBatch(context.Background(), &awssqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("send: %d entries failed", len(out.Failed))
	}
	return nil
}

// publish sends bodies through the topic (raw delivery), 10 per request,
// the way the payments relay does.
func publish(t *testing.T, tq *awstest.TopicQueue, bodies ...[]byte) {
	t.Helper()
	for len(bodies) > 0 {
		n := min(10, len(bodies))
		entries := make([]snstypes.PublishBatchRequestEntry, n)
		for i := range n {
			entries[i] = snstypes.PublishBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), Message: aws.String(string(bodies[i]))}
		}
		out, err := tq.SNS.PublishBatch(context.Background(), &sns.PublishBatchInput{TopicArn: aws.String(tq.TopicARN), PublishBatchRequestEntries: entries})
		if err != nil || len(out.Failed) > 0 {
			t.Fatalf("publish: %v %v", err, out)
		}
		bodies = bodies[n:]
	}
}

type event struct {
	id, paymentID, refundID string
	amount                  int64
	payer, merchant         string
}

func newPayment(amount int64, payer, merchant string) event {
	return event{id: uuid.NewString(), paymentID: uuid.NewString(), amount: amount, payer: payer, merchant: merchant}
}

func (e event) refund(amount int64) event {
	return event{id: uuid.NewString(), paymentID: e.paymentID, refundID: uuid.NewString(), amount: amount, payer: e.payer, merchant: e.merchant}
}

// authorized is the payment.authorized of a manual payment of e's amount.
func (e event) authorized() []byte {
	ts := time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.authorized","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.authorized/v1.json","data":{"payment_id":%q,"amount":%d,"currency":"BRL","payer_id":%q,"merchant_id":%q,"capture_before":"2099-01-01T00:00:00Z"}}`,
		uuid.NewString(), e.paymentID, ts, e.paymentID, e.amount, e.payer, e.merchant))
}

// captured is the payment.captured of amount of e's authorization.
func (e event) captured(amount int64) []byte {
	ts := time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.captured","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.captured/v1.json","data":{"payment_id":%q,"amount":%d,"currency":"BRL","payer_id":%q,"merchant_id":%q,"amount_authorized":%d,"amount_released":%d}}`,
		uuid.NewString(), e.paymentID, ts, e.paymentID, amount, e.payer, e.merchant, e.amount, e.amount-amount))
}

func (e event) body() []byte {
	ts := time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	if e.refundID == "" {
		return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":%q,"amount":%d,"currency":"BRL","payer_id":%q,"merchant_id":%q}}`,
			e.id, e.paymentID, ts, e.paymentID, e.amount, e.payer, e.merchant))
	}
	return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.refunded","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.refunded/v1.json","data":{"payment_id":%q,"refund_id":%q,"amount":%d,"currency":"BRL","payer_id":%q,"merchant_id":%q,"refunded_amount":%d}}`,
		e.id, e.paymentID, ts, e.paymentID, e.refundID, e.amount, e.payer, e.merchant, e.amount))
}

func TestSameEventDeliveredThreeTimes(t *testing.T) {
	t.Parallel()
	r := newRig(t, awstest.QueueConfig{})
	r.start(t, r.tq.SQS, 2)
	body := newPayment(1050, "cus_1", "mer_1").body()
	publish(t, r.tq, body)
	send(t, r.tq.SQS, r.tq.QueueURL, body, body)
	waitFor(t, time.Minute, "3 messages processed", func() bool {
		return r.metric(t, "ledger_messages_processed_total", "outcome", "applied")+r.metric(t, "ledger_messages_processed_total", "outcome", "duplicate") >= 3
	})
	if n := r.ledgerTransactions(t); n != 1 {
		t.Errorf("ledger transactions: got %d, want 1", n)
	}
	if got := r.metric(t, "ledger_duplicates_suppressed_total"); got != 2 {
		t.Errorf("duplicates suppressed: got %v, want 2", got)
	}
}

// lossyAcks is the real SQS client whose first deletes fail: the commit
// happened, the acknowledgement was lost.
type lossyAcks struct {
	*awssqs.Client
	lose atomic.Int32
}

func (l *lossyAcks) DeleteMessageBatch(ctx context.Context, in *awssqs.DeleteMessageBatchInput, opts ...func(*awssqs.Options)) (*awssqs.DeleteMessageBatchOutput, error) {
	if l.lose.Add(-1) >= 0 {
		return nil, fmt.Errorf("connection reset by peer (injected)")
	}
	return l.Client.DeleteMessageBatch(ctx, in, opts...)
}

func TestLostAckIsAbsorbedByTheInbox(t *testing.T) {
	t.Parallel()
	t.Run("delete fails", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, awstest.QueueConfig{VisibilityTimeout: time.Second})
		api := &lossyAcks{Client: r.tq.SQS}
		api.lose.Store(1)
		r.start(t, api, 1)
		send(t, r.tq.SQS, r.tq.QueueURL, newPayment(700, "cus_2", "mer_2").body())
		waitFor(t, time.Minute, "the redelivery to be absorbed", func() bool {
			return r.metric(t, "ledger_duplicates_suppressed_total") >= 1
		})
		if n := r.ledgerTransactions(t); n != 1 {
			t.Errorf("ledger transactions: got %d, want 1", n)
		}
		if got := r.metric(t, "ledger_ack_failures_total"); got != 1 {
			t.Errorf("ack failures: got %v, want 1", got)
		}
	})
	t.Run("process stopped before the delete", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, awstest.QueueConfig{})
		body := newPayment(900, "cus_3", "mer_3").body()
		// A previous process committed this message and died before its
		// delete: the message is still on the queue.
		if res, err := r.svc.sync.Receive(context.Background(), body); err != nil || res.Disposition != inbox.Applied {
			t.Fatalf("first apply: %v %v", res.Disposition, err)
		}
		send(t, r.tq.SQS, r.tq.QueueURL, body)
		r.start(t, r.tq.SQS, 1)
		waitFor(t, time.Minute, "the redelivery to be absorbed", func() bool {
			return r.metric(t, "ledger_duplicates_suppressed_total") >= 1
		})
		if n := r.ledgerTransactions(t); n != 1 {
			t.Errorf("ledger transactions: got %d, want 1", n)
		}
	})
}

func TestPoisonMessageGoesToTheDLQAndIsRedriven(t *testing.T) {
	t.Parallel()
	r := newRig(t, awstest.QueueConfig{MaxReceiveCount: 2, VisibilityTimeout: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = sqs.WatchDLQ(ctx, r.tq.SQS, r.tq.DLQURL, 200*time.Millisecond, r.m, logtest.Discard()) }()
	r.start(t, r.tq.SQS, 4)

	var before, after [][]byte
	for i := range 50 {
		before = append(before, newPayment(int64(100+i), "cus_p", "mer_p").body())
		after = append(after, newPayment(int64(200+i), "cus_p", "mer_p").body())
	}
	poison := []byte(`{"specversion":"1.0","id":"` + uuid.NewString() + `","type":"payment.created","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","time":"2026-11-29T12:00:00.000Z","data":{"amount":"lots"}}`)
	publish(t, r.tq, before...)
	publish(t, r.tq, poison)
	publish(t, r.tq, after...)

	waitFor(t, 90*time.Second, "100 good messages applied", func() bool {
		return r.metric(t, "ledger_messages_processed_total", "outcome", "applied") >= 100
	})
	waitFor(t, time.Minute, "the poison message in the DLQ", func() bool { return r.metric(t, "ledger_dlq_messages") >= 1 })
	if n := r.ledgerTransactions(t); n != 100 {
		t.Errorf("ledger transactions: got %d, want 100", n)
	}
	if got := r.metric(t, "ledger_processing_failures_total", "reason", "poison"); got < 2 {
		t.Errorf("poison failures: got %v, want at least maxReceiveCount (2)", got)
	}

	r.stop(t)
	rep, err := sqs.Redrive(context.Background(), r.tq.SQS, r.tq.DLQURL, r.tq.QueueURL, logtest.Discard())
	if err != nil {
		t.Fatalf("Redrive: %v", err)
	}
	if rep.Moved != 1 {
		t.Errorf("redrive: got %+v, want 1 moved", rep)
	}
	back := r.tq.Drain(t, r.tq.QueueURL, 1, 30*time.Second)
	if len(back) != 1 || aws.ToString(back[0].Body) != string(poison) {
		t.Fatalf("queue after redrive: got %d messages, want the poison message back", len(back))
	}
}

// TestRefundBeforePaymentThroughTheBroker: a refund delivered before its
// payment waits — not acknowledged, so SQS redelivers it after the
// visibility timeout — and applies once the payment has; the balances end
// as if in order.
func TestRefundBeforePaymentThroughTheBroker(t *testing.T) {
	t.Parallel()
	r := newRig(t, awstest.QueueConfig{VisibilityTimeout: time.Second})
	r.start(t, r.tq.SQS, 2)
	p := newPayment(1000, "cus_o", "mer_o")
	publish(t, r.tq, p.refund(400).body())
	waitFor(t, time.Minute, "the refund tried and left for redelivery", func() bool {
		return r.metric(t, "ledger_processing_failures_total", "reason", "error") >= 1
	})
	publish(t, r.tq, p.body())
	waitFor(t, time.Minute, "the payment and the refund applied", func() bool {
		return r.metric(t, "ledger_messages_processed_total", "outcome", "applied") >= 2
	})
	for account, want := range map[string]int64{"payer:mer_o:cus_o": -600, "merchant:mer_o": 600} {
		bs, err := r.svc.Balances(context.Background(), account)
		if err != nil || len(bs) != 1 || bs[0].Amount() != want {
			t.Errorf("%s: got %v %v, want %d BRL (as if in order)", account, bs, err, want)
		}
	}
}

// TestCaptureBeforeAuthorizationThroughTheBroker: in the sync mode a capture
// delivered before its authorization is left for redelivery, and once the
// authorization is applied the capture posts and releases the hold.
func TestCaptureBeforeAuthorizationThroughTheBroker(t *testing.T) {
	t.Parallel()
	r := newRig(t, awstest.QueueConfig{VisibilityTimeout: time.Second})
	r.start(t, r.tq.SQS, 2)
	p := newPayment(2500, "cus_h", "mer_h")
	publish(t, r.tq, p.captured(2000))
	waitFor(t, time.Minute, "the capture tried and left for redelivery", func() bool {
		return r.metric(t, "ledger_processing_failures_total", "reason", "error") >= 1
	})
	publish(t, r.tq, p.authorized())
	waitFor(t, time.Minute, "the authorization and the capture applied", func() bool {
		return r.metric(t, "ledger_messages_processed_total", "outcome", "applied") >= 2
	})
	bs, err := r.svc.MerchantBalances(context.Background(), "mer_h", time.Time{})
	if err != nil || len(bs) != 1 || bs[0].Available() != 2000 || bs[0].Pending() != 0 {
		t.Errorf("merchant: got %v, %v; want 2000 available, nothing pending", bs, err)
	}
}

func TestEightWorkersThroughTheBroker(t *testing.T) {
	t.Parallel()
	r := newRig(t, awstest.QueueConfig{})
	r.start(t, r.tq.SQS, 8)
	var unique, all [][]byte
	for i := range 250 {
		p := newPayment(int64(10+i), fmt.Sprintf("cus_%d", i%7), fmt.Sprintf("mer_%d", i%3))
		unique = append(unique, p.body())
	}
	all = append(all, unique...)
	for i := 0; i < len(unique); i += 5 { // 50 duplicates: 1 in 6 deliveries
		all = append(all, unique[i])
	}
	send(t, r.tq.SQS, r.tq.QueueURL, all...)
	waitFor(t, 90*time.Second, "all messages processed", func() bool {
		return r.metric(t, "ledger_messages_processed_total", "outcome", "applied")+
			r.metric(t, "ledger_messages_processed_total", "outcome", "duplicate") >= float64(len(all))
	})
	if got := r.metric(t, "ledger_messages_processed_total", "outcome", "applied"); got != float64(len(unique)) {
		t.Errorf("applied: got %v, want %d", got, len(unique))
	}
	if n := r.ledgerTransactions(t); n != len(unique) {
		t.Errorf("ledger transactions: got %d, want %d", n, len(unique))
	}
	var sum int64
	if err := r.pool.QueryRow(context.Background(), `SELECT coalesce(sum(amount), 0) FROM ledger_entries WHERE account_id LIKE 'merchant:%'`).Scan(&sum); err != nil {
		t.Fatal(err)
	}
	var want int64
	for i := range 250 {
		want += int64(10 + i)
	}
	if sum != want {
		t.Errorf("merchants' total: got %d, want %d", sum, want)
	}
}

// stuckHandler never commits: a database that stopped answering. It reports
// each message it starts.
type stuckHandler struct{ started chan struct{} }

func (h stuckHandler) Receive(ctx context.Context, _ []byte) (inbox.Result, error) {
	select {
	case h.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return inbox.Result{}, ctx.Err()
}

func TestStopReleasesWhatItDidNotApply(t *testing.T) {
	t.Parallel()
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{}) // visibility timeout 30s: a message left hidden would miss the drain below
	var bodies [][]byte
	for i := range 5 {
		bodies = append(bodies, newPayment(int64(100+i), "cus_s", "mer_s").body())
	}
	send(t, tq.SQS, tq.QueueURL, bodies...)
	reg := prometheus.NewRegistry()
	h := stuckHandler{started: make(chan struct{}, 1)}
	c := sqs.NewConsumer(tq.SQS, h, tq.QueueURL, logtest.Discard(), sqs.NewMetrics(reg, "ledger"), time.Now, sqs.Config{
		Workers: 1, WaitTime: time.Second, ShutdownTimeout: 500 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	select {
	case <-h.started:
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the consumer received nothing")
	}
	cancel() // SIGTERM with a batch in hand whose first transaction never ends
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its shutdown timeout")
	}
	released := metricValue(t, reg, "ledger_messages_released_total")
	if released < 1 {
		t.Fatalf("released: got %v, want the batch in hand", released)
	}
	got := tq.Drain(t, tq.QueueURL, len(bodies), 5*time.Second)
	if len(got) != len(bodies) {
		t.Errorf("drained %d of %d messages within 5s of the stop; the other %d stay hidden for the visibility timeout (%v released)",
			len(got), len(bodies), len(bodies)-len(got), released)
	}
}

func TestRedriveToAFIFOQueueKeepsEachPaymentsOrder(t *testing.T) {
	t.Parallel()
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{FIFO: true})
	ctx := context.Background()
	// The first send of each body uses the deduplication id a redrive must
	// not reuse: the copy would be dropped as its duplicate.
	sent := []struct{ group, body string }{{"pay-a", "a1"}, {"pay-b", "b1"}, {"pay-a", "a2"}, {"pay-a", "a3"}}
	for _, m := range sent {
		if _, err := tq.SQS.SendMessage(ctx, &awssqs.SendMessageInput{
			QueueUrl: aws.String(tq.DLQURL), MessageBody: aws.String(m.body),
			MessageGroupId: aws.String(m.group), MessageDeduplicationId: aws.String(m.body),
		}); err != nil {
			t.Fatalf("send to the DLQ: %v", err)
		}
		if _, err := tq.SQS.SendMessage(ctx, &awssqs.SendMessageInput{
			QueueUrl: aws.String(tq.QueueURL), MessageBody: aws.String("first " + m.body),
			MessageGroupId: aws.String(m.group), MessageDeduplicationId: aws.String(m.body),
		}); err != nil {
			t.Fatalf("send to the queue: %v", err)
		}
	}
	if got := tq.Drain(t, tq.QueueURL, len(sent), 30*time.Second); len(got) != len(sent) {
		t.Fatalf("first sends: got %d messages, want %d", len(got), len(sent))
	}

	rep, err := sqs.Redrive(ctx, tq.SQS, tq.DLQURL, tq.QueueURL, logtest.Discard())
	if err != nil {
		t.Fatalf("Redrive: %v", err)
	}
	if rep.Moved != int64(len(sent)) || rep.SendFailed != 0 {
		t.Errorf("redrive: got %+v, want %d moved", rep, len(sent))
	}
	back := tq.Drain(t, tq.QueueURL, len(sent), 30*time.Second)
	order := map[string][]string{}
	for _, m := range back {
		g := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		order[g] = append(order[g], aws.ToString(m.Body))
	}
	if got := fmt.Sprint(order["pay-a"], order["pay-b"]); got != "[a1 a2 a3] [b1]" {
		t.Errorf("queue after redrive, by message group: got %s, want [a1 a2 a3] [b1]", got)
	}
}
