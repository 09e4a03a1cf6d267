package ledgerstore_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// TestDatabaseHoldsTheLimits writes ledger_payments and ledger_balances
// directly, past each limit the domain keeps: the database refuses every one,
// whatever code sent it.
func TestDatabaseHoldsTheLimits(t *testing.T) {
	t.Parallel()
	svc, _, pool := newService(t)
	ctx := context.Background()
	p := newPayment(2500, "cus_k", "mer_k")
	if _, err := svc.Apply(ctx, p.authorization().body()); err != nil {
		t.Fatal(err)
	}
	auto := newPayment(1000, "cus_k", "mer_k")
	if _, err := svc.Apply(ctx, auto.body()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, sql, constraint string
		args                  []any
	}{
		{"a hold below zero", `UPDATE ledger_payments SET held = -1 WHERE payment_id = $1`, "ledger_payments_held_check", []any{p.paymentID}},
		{"a hold above the authorization", `UPDATE ledger_payments SET held = 2501 WHERE payment_id = $1`, "ledger_payments_held_check", []any{p.paymentID}},
		{"a capture above the authorization", `UPDATE ledger_payments SET held = 0, released_at = now(), amount_captured = 2501 WHERE payment_id = $1`, "ledger_payments_captured_check", []any{p.paymentID}},
		{"refunds above the capture", `UPDATE ledger_payments SET amount_refunded = 1001 WHERE payment_id = $1`, "ledger_payments_refunded_check", []any{auto.paymentID}},
		{"a refund of what an authorization holds", `UPDATE ledger_payments SET amount_refunded = 1 WHERE payment_id = $1`, "ledger_payments_refunded_check", []any{p.paymentID}},
		{"a released hold still holding", `UPDATE ledger_payments SET released_at = now() WHERE payment_id = $1`, "ledger_payments_hold_check", []any{p.paymentID}},
		{"a hold on a payment captured at once", `UPDATE ledger_payments SET held = 5 WHERE payment_id = $1`, "ledger_payments_held_check", []any{auto.paymentID}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pool.Exec(ctx, tt.sql, tt.args...)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != tt.constraint {
				t.Errorf("got %v, want %s to refuse it", err, tt.constraint)
			}
		})
	}
	t.Run("a payment's record deleted", func(t *testing.T) {
		if _, err := pool.Exec(ctx, `DELETE FROM ledger_payments WHERE payment_id = $1`, auto.paymentID); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("got %v, want the delete refused", err)
		}
	})
	t.Run("pending written by hand", func(t *testing.T) {
		if _, err := pool.Exec(ctx, `UPDATE ledger_balances SET pending = pending + 1`); err == nil || !strings.Contains(err.Error(), "kept by the postings") {
			t.Errorf("got %v, want the write refused", err)
		}
	})
	if n := count(t, pool, `SELECT pending FROM ledger_balances WHERE account_id = 'merchant:mer_k'`); n != 2500 {
		t.Errorf("pending after the refusals: got %d, want 2500", n)
	}
}

// TestPendingPastInt64IsRefused: holds that would take a merchant's pending
// balance past int64 fail the commit, as a posting does, and park.
func TestPendingPastInt64IsRefused(t *testing.T) {
	t.Parallel()
	svc, _, pool := newService(t)
	ctx := context.Background()
	if _, err := svc.Apply(ctx, newPayment(math.MaxInt64, "cus_m", "mer_m").authorization().body()); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Apply(ctx, newPayment(1, "cus_m", "mer_m").authorization().body())
	if err != nil || res.Disposition != inbox.Parked {
		t.Fatalf("a hold past int64: got %v, %v; want parked", res.Disposition, err)
	}
	if n := count(t, pool, `SELECT count(*) FROM ledger_payments`); n != 1 {
		t.Errorf("payments recorded: got %d, want 1", n)
	}
}

// TestCaptureBeforeItsAuthorizationSync: in the sync mode a capture that
// arrives before its authorization is not acknowledged (an error that is not
// permanent, so the consumer leaves it for redelivery) and writes nothing;
// redelivered after the authorization, it applies, and the hold is released.
func TestCaptureBeforeItsAuthorizationSync(t *testing.T) {
	t.Parallel()
	svc, _, pool := newService(t)
	ctx := context.Background()
	p := newPayment(2500, "cus_s", "mer_s")
	capture := p.capture(2000)
	for range 2 {
		res, err := svc.Apply(ctx, capture.body())
		if !errors.Is(err, ledger.ErrOutOfOrder) || errors.Is(err, inbox.ErrPermanent) || errors.Is(err, inbox.ErrInvalidEvent) {
			t.Fatalf("the capture first: got %v, %v; want ErrOutOfOrder, to be redelivered", res.Disposition, err)
		}
	}
	if n := count(t, pool, `SELECT count(*) FROM inbox_messages`); n != 0 {
		t.Fatalf("the capture that waits left %d inbox rows; its redelivery would be taken for a duplicate", n)
	}
	if res, err := svc.Apply(ctx, p.authorization().body()); err != nil || res.Disposition != inbox.Applied {
		t.Fatalf("the authorization: got %v, %v", res.Disposition, err)
	}
	if res, err := svc.Apply(ctx, capture.body()); err != nil || res.Disposition != inbox.Applied {
		t.Fatalf("the capture redelivered: got %v, %v; want applied", res.Disposition, err)
	}
	assertCaptured(t, svc, pool, "mer_s", 2000)
}

// TestCaptureBeforeItsAuthorizationAsync: in the async mode the capture is
// recorded and acknowledged; the processor's attempt fails, retryable, and
// reschedules it with backoff; once the authorization is applied, the next
// attempt applies it. Only a row whose attempts run out is parked.
func TestCaptureBeforeItsAuthorizationAsync(t *testing.T) {
	t.Parallel()
	svc, store, pool := newService(t)
	ctx := context.Background()
	proc := newProcessor(t, store, nil, inbox.ProcessorConfig{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, MaxAttempts: 100})
	p := newPayment(2500, "cus_a", "mer_a")
	capture := p.capture(2500)
	record(t, svc, capture.body())
	drain(t, proc)
	var attempts int
	var errText string
	var parked bool
	if err := pool.QueryRow(ctx, `SELECT attempts, coalesce(error, ''), parked_at IS NOT NULL FROM inbox_messages WHERE id = $1`, capture.id).Scan(&attempts, &errText, &parked); err != nil {
		t.Fatal(err)
	}
	if attempts < 1 || parked || !strings.Contains(errText, "waits for its authorization") {
		t.Fatalf("the capture first: %d attempts, parked %v, error %q; want retried, not parked, waiting for its hold", attempts, parked, errText)
	}
	record(t, svc, p.authorization().body())
	deadline := time.Now().Add(30 * time.Second)
	for count(t, pool, `SELECT count(*) FROM inbox_messages WHERE processed_at IS NULL`) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the capture was not applied after its authorization")
		}
		drain(t, proc) // the capture is due again after its backoff
	}
	assertCaptured(t, svc, pool, "mer_a", 2500)

	// A capture whose authorization never comes is parked when its
	// attempts run out, with the reason.
	few := newProcessor(t, store, nil, inbox.ProcessorConfig{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, MaxAttempts: 2})
	lost := newPayment(100, "cus_a", "mer_a").capture(100)
	record(t, svc, lost.body())
	deadline = time.Now().Add(30 * time.Second)
	for count(t, pool, `SELECT count(*) FROM inbox_messages WHERE id = $1 AND parked_at IS NOT NULL`, lost.id) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the capture without an authorization was never parked")
		}
		drain(t, few)
	}
}

func assertCaptured(t *testing.T, svc books, pool *pgxpool.Pool, merchant string, amount int64) {
	t.Helper()
	bs, err := svc.MerchantBalances(context.Background(), merchant, time.Time{})
	if err != nil || len(bs) != 1 || bs[0].Available() != amount || bs[0].Pending() != 0 {
		t.Errorf("merchant %s: got %v, %v; want %d available, nothing pending", merchant, bs, err, amount)
	}
	if n := count(t, pool, `SELECT count(*) FROM ledger_transactions WHERE kind = 'capture'`); n != 1 {
		t.Errorf("capture transactions: got %d, want 1", n)
	}
}

// TestRefusedEventsAreParkedAtOnce: a capture past its hold is parked at
// once in either mode, with its reason, and nothing of it posted.
func TestRefusedEventsAreParkedAtOnce(t *testing.T) {
	t.Parallel()
	svc, store, pool := newService(t)
	ctx := context.Background()
	p := newPayment(2500, "cus_r", "mer_r")
	if _, err := svc.Apply(ctx, p.authorization().body()); err != nil {
		t.Fatal(err)
	}
	over := p.capture(2600)
	over.authorized = 2600 // the event's own arithmetic holds; the hold is 2500
	res, err := svc.Apply(ctx, over.body())
	if err != nil || res.Disposition != inbox.Parked {
		t.Fatalf("sync: a capture past the hold: got %v, %v; want parked", res.Disposition, err)
	}
	second := p.capture(100)
	second.authorized = 2600
	second.id = uuid.NewString()
	record(t, svc, second.body())
	drain(t, newProcessor(t, store, nil, inbox.ProcessorConfig{}))
	if n := count(t, pool, `SELECT count(*) FROM inbox_messages WHERE parked_at IS NOT NULL AND attempts <= 1 AND error LIKE '%refused%'`); n != 2 {
		t.Errorf("parked at their first attempt with the reason: got %d rows, want 2", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM ledger_transactions`); n != 0 {
		t.Errorf("ledger transactions: got %d, want none", n)
	}
}

// TestReconcileComparesHolds: a manual payment's authorization, capture and
// cancellation are facts on both sides — the payments database's
// ledger_facts and the ledger's holds and postings — and reconcile finds them
// equal, or names the one that differs.
func TestReconcileComparesHolds(t *testing.T) {
	t.Parallel()
	svc, store, _ := newService(t)
	payments := pgtest.New(t, paymentsmigrations.FS)
	ctx := context.Background()
	at := time.Now().Add(-time.Hour)
	insert := func(p event, status string, captured int64, canceled bool) {
		t.Helper()
		var capturedAt, canceledAt *time.Time
		var reason *string
		if captured > 0 {
			capturedAt = &at
		}
		if canceled {
			r := "requested_by_customer"
			canceledAt, reason = &at, &r
		}
		if _, err := payments.Exec(ctx, `INSERT INTO payments (id, amount, refunded_amount, currency, status, payer_id, merchant_id, created_at, updated_at,
				capture_method, amount_captured, capture_before, captured_at, canceled_at, cancellation_reason)
			VALUES ($1, $2, 0, 'BRL', $3, $4, $5, $6, $6, 'manual', $7, $8, $9, $10, $11)`,
			p.paymentID, p.amount, status, p.payer, p.merchant, at, captured, at.Add(7*24*time.Hour), capturedAt, canceledAt, reason); err != nil {
			t.Fatal(err)
		}
	}
	held, taken, dropped := newPayment(700, "cus_q", "mer_q"), newPayment(2500, "cus_q", "mer_q"), newPayment(400, "cus_q", "mer_q")
	insert(held, "authorized", 0, false)
	insert(taken, "captured", 2000, false)
	insert(dropped, "canceled", 0, true)
	for _, e := range []event{held.authorization(), taken.authorization(), taken.capture(2000), dropped.authorization(), dropped.cancellation()} {
		if _, err := svc.Apply(ctx, e.body()); err != nil {
			t.Fatal(err)
		}
	}
	rec := ledgers.NewReconciler(ledgerstore.NewPaymentsDB(payments), store, time.Now)
	divs, err := rec.Reconcile(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(divs) != 0 {
		t.Fatalf("got %v, want no divergence", divs)
	}
	if _, err := payments.Exec(ctx, `UPDATE payments SET amount_captured = 1999 WHERE id = $1`, taken.paymentID); err != nil {
		t.Fatal(err)
	}
	divs, err = rec.Reconcile(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(divs) != 1 || !strings.Contains(divs[0].String(), "capture "+taken.paymentID) {
		t.Errorf("got %v, want one divergence, the capture of %s", divs, taken.paymentID)
	}
}

// TestAReleaseIsNeverDatedBeforeItsHold: the inbox dates an event's effects
// with a time read before its transaction, and the authorization it
// releases may have been placed later than that — by a transaction that
// committed meanwhile, or a replica whose clock runs ahead. The capture and
// the cancellation still apply, their release dated at the placement, which
// the database requires (ledger_payments_hold_check); refusing them would
// leave the hold open for good.
func TestAReleaseIsNeverDatedBeforeItsHold(t *testing.T) {
	t.Parallel()
	_, store, pool := newService(t)
	ctx := context.Background()
	placed := time.Now().UTC().Truncate(time.Microsecond)
	at := func(tm time.Time) *inbox.Service[ledgers.Ledger, ledgers.Instruction] {
		return inbox.NewService(store, newProcessor(t, store, nil, inbox.ProcessorConfig{}), func() time.Time { return tm }, inbox.Config{Mode: inbox.Sync})
	}
	for name, release := range map[string]func(event) event{
		"capture":      func(p event) event { return p.capture(1500) },
		"cancellation": func(p event) event { return p.cancellation() },
	} {
		p := newPayment(2500, "cus_t", "mer_t")
		if res, err := at(placed).Receive(ctx, p.authorization().body()); err != nil || res.Disposition != inbox.Applied {
			t.Fatalf("%s: the authorization: %v, %v", name, res.Disposition, err)
		}
		res, err := at(placed.Add(-time.Second)).Receive(ctx, release(p).body())
		if err != nil || res.Disposition != inbox.Applied {
			t.Fatalf("%s dated a second before its hold: %v, %v; want applied", name, res.Disposition, err)
		}
		var held int64
		var released time.Time
		if err := pool.QueryRow(ctx, `SELECT held, released_at FROM ledger_payments WHERE payment_id = $1`, p.paymentID).Scan(&held, &released); err != nil {
			t.Fatal(err)
		}
		if held != 0 || !released.Equal(placed) {
			t.Errorf("%s: held %d, released at %s; want 0, at the placement %s", name, held, released, placed)
		}
	}
}
