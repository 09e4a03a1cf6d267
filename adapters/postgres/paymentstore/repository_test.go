package paymentstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/payments/paymentstest"
	"github.com/payments-outbox/payments-outbox/domain/payment"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func newService(t *testing.T) (*payments.Service, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.New(t, paymentsmigrations.FS)
	repo := paymentstore.New(pool)
	return payments.NewService(repo, time.Now, func() string { return uuid.Must(uuid.NewV7()).String() }, payments.Config{}), pool
}

func TestRepositoryHonoursTheContract(t *testing.T) {
	t.Parallel()
	paymentstest.RunContract(t, func(t *testing.T) payments.Repository {
		return paymentstore.New(pgtest.New(t, paymentsmigrations.FS))
	})
}

type outboxRow struct {
	ID, Type, AggregateID, Status string
	Attempts                      int
	Payload                       map[string]any
}

func outboxRows(t *testing.T, pool *pgxpool.Pool) []outboxRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT id::text, type, aggregate_id::text, status, attempts, payload FROM outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		if err := rows.Scan(&r.ID, &r.Type, &r.AggregateID, &r.Status, &r.Attempts, &r.Payload); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCreateWritesPaymentAndOutboxRow(t *testing.T) {
	t.Parallel()
	svc, pool := newService(t)
	ctx := context.Background()
	out, err := svc.Create(ctx, payments.CreatePayment{Principal: platform, Amount: 1050, Currency: "BRL", PayerID: "cus_1", MerchantID: "mer_1", Description: "x"})
	if err != nil {
		t.Fatal(err)
	}
	id := string(out.Payment.ID())
	if n := count(t, pool, `SELECT count(*) FROM payments WHERE id = $1`, id); n != 1 {
		t.Fatalf("payments rows = %d, want 1", n)
	}
	rows := outboxRows(t, pool)
	if len(rows) != 1 {
		t.Fatalf("outbox rows = %d, want 1", len(rows))
	}
	r := rows[0]
	if r.Type != "payment.created" || r.AggregateID != id || r.Status != "PENDING" || r.Attempts != 0 {
		t.Errorf("outbox row = %+v", r)
	}
	// The payload is what the application encoded for the event, under the
	// row's id, byte for byte.
	p := out.Payment
	want, err := payments.EncodeEvent(r.ID, payment.Created{PaymentID: p.ID(), Amount: p.Amount(), PayerID: p.PayerID(), MerchantID: p.MerchantID(), At: p.CreatedAt()}, payments.TraceContext{})
	if err != nil {
		t.Fatal(err)
	}
	if got := payloadText(t, pool, r.ID); got != string(want) {
		t.Errorf("payload =\n%s\nwant the encoder's\n%s", got, want)
	}
}

func payloadText(t *testing.T, pool *pgxpool.Pool, id string) string {
	t.Helper()
	var text string
	if err := pool.QueryRow(context.Background(), `SELECT payload::text FROM outbox WHERE id = $1`, id).Scan(&text); err != nil {
		t.Fatal(err)
	}
	return text
}

// TestOutboxKeepsTheBytesItIsGiven: the store writes each message as it
// received it — its id, type and payment, its trace context in the columns
// the relay reads, and its payload byte for byte, with the spacing, key
// order and escapes a JSON store would rewrite — and adds nothing of its
// own. The wire form is the application's; the outbox only carries it.
func TestOutboxKeepsTheBytesItIsGiven(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	repo := paymentstore.New(pool)
	p, err := payment.New(payment.ID(uuid.NewString()), 1050, "BRL", "cus_1", "mer_1", "x", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p.PullEvents() // the store never reads them: it stores the messages it is handed
	msg := outbox.Message{
		ID: uuid.Must(uuid.NewV7()), Type: "payment.created", AggregateID: uuid.MustParse(string(p.ID())),
		Payload:     []byte(`{ "z":1,  "a":"\u00fc<&>", "n":1.50 }`),
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", TraceState: "vendor=opaque",
	}
	if _, err := repo.Create(context.Background(), p, []outbox.Message{msg}, nil); err != nil {
		t.Fatal(err)
	}
	var typ, aggregate, parent, state string
	if err := pool.QueryRow(context.Background(), `SELECT type, aggregate_id::text, traceparent, tracestate FROM outbox WHERE id = $1`,
		msg.ID.String()).Scan(&typ, &aggregate, &parent, &state); err != nil {
		t.Fatal(err)
	}
	if typ != msg.Type || aggregate != string(p.ID()) || parent != msg.TraceParent || state != msg.TraceState {
		t.Errorf("outbox row = %s %s %q %q, want %s %s %q %q", typ, aggregate, parent, state, msg.Type, p.ID(), msg.TraceParent, msg.TraceState)
	}
	if got := payloadText(t, pool, msg.ID.String()); got != string(msg.Payload) {
		t.Errorf("payload = %s, want the bytes given, %s", got, msg.Payload)
	}
	if n := count(t, pool, `SELECT count(*) FROM outbox`); n != 1 {
		t.Errorf("outbox rows = %d, want the one message given", n)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestRefundWritesRefundAndOutboxRow(t *testing.T) {
	t.Parallel()
	svc, pool := newService(t)
	ctx := context.Background()
	created, err := svc.Create(ctx, payments.CreatePayment{Principal: platform, Amount: 1000, Currency: "USD", PayerID: "a", MerchantID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: created.Payment.ID(), Amount: 250})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, pool, `SELECT count(*) FROM refunds WHERE id = $1 AND amount = 250`, string(out.Refund.ID)); n != 1 {
		t.Errorf("refund rows = %d, want 1", n)
	}
	var data map[string]any
	for _, r := range outboxRows(t, pool) {
		if r.Type == "payment.refunded" {
			data = r.Payload["data"].(map[string]any)
		}
	}
	want := map[string]any{
		"payment_id": string(created.Payment.ID()), "refund_id": string(out.Refund.ID), "amount": 250.0,
		"currency": "USD", "payer_id": "a", "merchant_id": "b", "refunded_amount": 250.0,
	}
	if mustJSON(data) != mustJSON(want) {
		t.Errorf("refunded data = %v, want %v", data, want)
	}
}

// A transaction that fails after the state write leaves NEITHER the state nor
// the outbox row: the dual-write problem cannot happen.
func TestFailedOutboxInsertRollsBackTheState(t *testing.T) {
	t.Parallel()
	svc, pool := newService(t)
	ctx := context.Background()
	created, err := svc.Create(ctx, payments.CreatePayment{Principal: platform, Amount: 1000, Currency: "BRL", PayerID: "a", MerchantID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	// From now on every outbox insert violates a constraint.
	if _, err := pool.Exec(ctx, `ALTER TABLE outbox ADD CONSTRAINT fail_inserts CHECK (false) NOT VALID`); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Create(ctx, payments.CreatePayment{Principal: platform, Amount: 777, Currency: "BRL", PayerID: "a", MerchantID: "b"})
	if err == nil {
		t.Fatal("create succeeded although its outbox insert must fail")
	}
	if n := count(t, pool, `SELECT count(*) FROM payments WHERE amount = 777`); n != 0 {
		t.Errorf("payment row exists without its outbox row")
	}
	_, err = svc.Create(ctx, payments.CreatePayment{Principal: platform, Amount: 778, Currency: "BRL", PayerID: "a", MerchantID: "b", IdempotencyKey: "k-fail"})
	if err == nil {
		t.Fatal("create with a key succeeded although its outbox insert must fail")
	}
	if n := count(t, pool, `SELECT (SELECT count(*) FROM payments WHERE amount = 778) + (SELECT count(*) FROM idempotency_keys)`); n != 0 {
		t.Errorf("payment or idempotency key committed without the outbox row")
	}
	_, err = svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: created.Payment.ID(), Amount: 100})
	if err == nil {
		t.Fatal("refund succeeded although its outbox insert must fail")
	}
	if n := count(t, pool, `SELECT count(*) FROM payments WHERE refunded_amount <> 0`); n != 0 {
		t.Errorf("refund state committed without its outbox row")
	}
	if n := count(t, pool, `SELECT count(*) FROM refunds`); n != 0 {
		t.Errorf("refund row committed without its outbox row")
	}
	if n := count(t, pool, `SELECT count(*) FROM outbox`); n != 1 {
		t.Errorf("outbox rows = %d, want only the first payment's", n)
	}
}

func TestConcurrentRefundsNeverExceedTheAmount(t *testing.T) {
	t.Parallel()
	svc, pool := newService(t)
	ctx := context.Background()
	created, err := svc.Create(ctx, payments.CreatePayment{Principal: platform, Amount: 1000, Currency: "BRL", PayerID: "a", MerchantID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			_, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: created.Payment.ID(), Amount: 100})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, payment.ErrRefundExceedsAmount):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 10 {
		t.Errorf("%d refunds succeeded, want 10", ok)
	}
	p, err := svc.Get(ctx, platform, created.Payment.ID())
	if err != nil {
		t.Fatal(err)
	}
	if p.RefundedMinor() != 1000 || p.Status() != payment.StatusRefunded {
		t.Errorf("refunded %d status %q, want 1000 refunded", p.RefundedMinor(), p.Status())
	}
	if n := count(t, pool, `SELECT count(*) FROM outbox WHERE type = 'payment.refunded'`); n != ok {
		t.Errorf("refunded outbox rows = %d, want one per successful refund (%d)", n, ok)
	}
	if n := count(t, pool, `SELECT coalesce(sum(amount), 0) FROM refunds`); n != 1000 {
		t.Errorf("sum of refunds = %d, want 1000", n)
	}
}

func TestConcurrentRequestsWithOneKeyCreateOnePayment(t *testing.T) {
	t.Parallel()
	svc, pool := newService(t)
	ctx := context.Background()
	req := payments.CreatePayment{Principal: platform, Amount: 500, Currency: "BRL", PayerID: "a", MerchantID: "b", IdempotencyKey: "same-key"}
	var wg sync.WaitGroup
	results := make(chan error, 20)
	ids := make(chan payment.ID, 20)
	for range 20 {
		wg.Go(func() {
			out, err := svc.Create(ctx, req)
			if err == nil {
				ids <- out.Payment.ID()
			}
			results <- err
		})
	}
	wg.Wait()
	close(results)
	close(ids)
	for err := range results {
		if err != nil && !errors.Is(err, idempotency.ErrKeyInFlight) {
			t.Errorf("unexpected error: %v", err)
		}
	}
	distinct := map[payment.ID]bool{}
	for id := range ids {
		distinct[id] = true
	}
	if len(distinct) != 1 {
		t.Errorf("requests answered with %d distinct payments, want 1", len(distinct))
	}
	if n := count(t, pool, `SELECT count(*) FROM payments`); n != 1 {
		t.Errorf("payments rows = %d, want 1", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM outbox`); n != 1 {
		t.Errorf("outbox rows = %d, want 1", n)
	}
	// After the race, a retry replays.
	out, err := svc.Create(ctx, req)
	if err != nil || !out.Replayed {
		t.Fatalf("retry after race: replayed=%v err=%v", out.Replayed, err)
	}
	if _, ok := distinct[out.Payment.ID()]; !ok {
		t.Errorf("replay returned %s, not the created payment", out.Payment.ID())
	}
}

func TestDeleteKeysBefore(t *testing.T) {
	t.Parallel()
	svc, pool := newService(t)
	ctx := context.Background()
	for _, k := range []string{"old-1", "old-2", "old-3", "new-1"} {
		if _, err := svc.Create(ctx, payments.CreatePayment{Principal: platform, Amount: 1, Currency: "BRL", PayerID: "a", MerchantID: "b", IdempotencyKey: k}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key LIKE 'old-%'`); err != nil {
		t.Fatal(err)
	}
	repo := paymentstore.New(pool)
	cutoff := time.Now().Add(-24 * time.Hour)
	n, err := repo.DeleteKeysBefore(ctx, cutoff, 2)
	if err != nil || n != 2 {
		t.Fatalf("one batch: deleted %d keys, %v; want 2 (the limit), nil", n, err)
	}
	n, err = repo.DeleteKeysBefore(ctx, cutoff, 2)
	if err != nil || n != 1 {
		t.Fatalf("second batch: deleted %d keys, %v; want the last old one, nil", n, err)
	}
	if left := count(t, pool, `SELECT count(*) FROM idempotency_keys WHERE key = 'new-1'`); left != 1 {
		t.Errorf("the fresh key was deleted")
	}
}

// TestNotifierWakesListenersAfterCommit: a LISTENing relay is notified after a
// write, and by then the write's outbox row is visible; Signal never blocks,
// however many commits arrive before the next NOTIFY is sent.
func TestNotifierWakesListenersAfterCommit(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	listener, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Release()
	if _, err := listener.Exec(ctx, "LISTEN "+postgres.OutboxChannel); err != nil {
		t.Fatal(err)
	}

	n := paymentstore.NewNotifier(pool, logtest.Discard())
	for range 1000 {
		n.Signal() // not running yet: folds into one pending wake-up
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- n.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-ran; err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	}()
	if _, err := listener.Conn().WaitForNotification(ctx); err != nil {
		t.Fatalf("pending signal sent no NOTIFY: %v", err)
	}

	svc := payments.NewService(paymentstore.Notifying(paymentstore.New(pool), n), time.Now,
		func() string { return uuid.Must(uuid.NewV7()).String() }, payments.Config{})
	if _, err := svc.Create(ctx, payments.CreatePayment{Principal: platform, Amount: 1050, Currency: "BRL", PayerID: "cus_1", MerchantID: "mer_1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := listener.Conn().WaitForNotification(ctx); err != nil {
		t.Fatalf("no NOTIFY after the write: %v", err)
	}
	var pending int
	if err := listener.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE status = 'PENDING'`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != 1 {
		t.Errorf("when the NOTIFY arrived the listener saw %d pending outbox rows, want 1", pending)
	}
}

// platform is who the use cases act as in these tests: the platform's key,
// which may name any merchant.
var platform = access.PlatformPrincipal("platkey")
