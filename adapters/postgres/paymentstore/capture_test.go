package paymentstore_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

var manualPayment = payments.CreatePayment{Principal: platform, Amount: 2500, Currency: "BRL", PayerID: "cus_1", MerchantID: "mer_1", CaptureMethod: "manual"}

// clock is a test's settable time.
type clock struct {
	mu sync.Mutex
	at time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.at }
func (c *clock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.at = t }

func newClockedService(t *testing.T, pool *pgxpool.Pool, c *clock) *payments.Service {
	t.Helper()
	return payments.NewService(paymentstore.New(pool), c.now, func() string { return uuid.Must(uuid.NewV7()).String() },
		payments.Config{AuthorizationTTL: time.Hour})
}

// TestExpiryOnPostgres: the listing finds the authorizations past their
// deadline and only those, and expiries that run at once, as on every
// replica, cancel each once, each with its payment.canceled in the outbox.
func TestExpiryOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t, paymentsmigrations.FS)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := &clock{at: t0}
	svc := newClockedService(t, pool, c)
	var expired []payment.ID
	for range 30 {
		out, err := svc.Create(ctx, manualPayment)
		if err != nil {
			t.Fatal(err)
		}
		expired = append(expired, out.Payment.ID())
	}
	captured, canceled := expired[0], expired[1]
	expired = expired[2:]
	if _, err := svc.Capture(ctx, payments.CapturePayment{Principal: platform, PaymentID: captured}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Cancel(ctx, payments.CancelPayment{Principal: platform, PaymentID: canceled}); err != nil {
		t.Fatal(err)
	}
	c.set(t0.Add(time.Minute))
	inTime, err := svc.Create(ctx, manualPayment)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, payments.CreatePayment{Principal: platform, Amount: 100, Currency: "BRL", PayerID: "cus_1", MerchantID: "mer_1"}); err != nil {
		t.Fatal(err)
	}
	c.set(t0.Add(time.Hour))

	repo := paymentstore.New(pool)
	listed, err := repo.ExpiredAuthorizations(ctx, c.now(), 100)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	want := slices.Clone(expired)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("listed %d expired authorizations %v, want the %d past capture_before %v", len(listed), listed, len(want), want)
	}

	var wg sync.WaitGroup
	totals := make([]int, 3)
	for i := range totals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := payments.NewExpiry(svc, repo.ExpiredAuthorizations, logtest.Discard(), payments.ExpiryConfig{Batch: 5}).Sweep(ctx)
			if err != nil {
				t.Error(err)
			}
			totals[i] = n
		}()
	}
	wg.Wait()
	if sum := totals[0] + totals[1] + totals[2]; sum != len(expired) {
		t.Errorf("the replicas canceled %v, %d in all, want %d: each expired authorization once", totals, sum, len(expired))
	}
	if n := count(t, pool, `SELECT count(*) FROM payments WHERE status = 'canceled' AND cancellation_reason = 'expired'`); n != len(expired) {
		t.Errorf("%d payments canceled as expired, want %d", n, len(expired))
	}
	if n := count(t, pool, `SELECT count(*) FROM outbox WHERE type = 'payment.canceled'`); n != len(expired)+1 {
		t.Errorf("%d payment.canceled in the outbox, want %d: the client's cancel and one per expiry", n, len(expired)+1)
	}
	p, err := svc.Get(ctx, platform, inTime.Payment.ID())
	if err != nil || p.Status() != payment.StatusAuthorized {
		t.Errorf("the authorization still in time: %v %v, want it authorized", err, p)
	}
}

// TestTheDatabaseRefusesWhatTheDomainDoes: the CHECKs behind the domain's
// rules, for a writer that bypasses it.
func TestTheDatabaseRefusesWhatTheDomainDoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t, paymentsmigrations.FS)
	svc := newClockedService(t, pool, &clock{at: time.Now().UTC().Truncate(time.Microsecond)})
	authorized, err := svc.Create(ctx, manualPayment)
	if err != nil {
		t.Fatal(err)
	}
	automatic, err := svc.Create(ctx, payments.CreatePayment{Principal: platform, Amount: 100, Currency: "BRL", PayerID: "cus_1", MerchantID: "mer_1"})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		id, set string
	}{
		"captured more than the amount":         {string(authorized.Payment.ID()), `status = 'captured', amount_captured = 2501, captured_at = now()`},
		"refunded more than was captured":       {string(authorized.Payment.ID()), `refunded_amount = 1`},
		"captured without a time":               {string(authorized.Payment.ID()), `status = 'captured', amount_captured = 100`},
		"canceled without a reason":             {string(authorized.Payment.ID()), `status = 'canceled', canceled_at = now()`},
		"an unknown cancellation reason":        {string(authorized.Payment.ID()), `status = 'canceled', canceled_at = now(), cancellation_reason = 'bored'`},
		"an automatic payment authorized":       {string(automatic.Payment.ID()), `status = 'authorized'`},
		"an automatic payment with a deadline":  {string(automatic.Payment.ID()), `capture_before = now()`},
		"a manual payment without its deadline": {string(authorized.Payment.ID()), `capture_before = NULL`},
		"an unknown capture method":             {string(automatic.Payment.ID()), `capture_method = 'later'`},
	} {
		_, err := pool.Exec(ctx, `UPDATE payments SET `+c.set+` WHERE id = $1`, c.id)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" {
			t.Errorf("%s: got %v, want a check violation", name, err)
		}
	}
}

// TestLedgerFactsOfManualPayments: a manual payment is an authorization from
// the start, a capture of amount_captured once captured — also after it is
// refunded, when an automatic one is still a payment — and a cancellation
// of its whole amount once canceled.
func TestLedgerFactsOfManualPayments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t, paymentsmigrations.FS)
	svc := newClockedService(t, pool, &clock{at: time.Now().UTC().Truncate(time.Microsecond)})
	newManual := func() payment.ID {
		out, err := svc.Create(ctx, manualPayment)
		if err != nil {
			t.Fatal(err)
		}
		return out.Payment.ID()
	}
	authorized, captured, refunded, canceled := newManual(), newManual(), newManual(), newManual()
	for _, id := range []payment.ID{captured, refunded} {
		if _, err := svc.Capture(ctx, payments.CapturePayment{Principal: platform, PaymentID: id, Amount: 2000}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Refund(ctx, payments.RefundPayment{Principal: platform, PaymentID: refunded, Amount: 2000}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Cancel(ctx, payments.CancelPayment{Principal: platform, PaymentID: canceled, CancellationReason: "abandoned"}); err != nil {
		t.Fatal(err)
	}
	type fact struct {
		kind   string
		amount int64
	}
	got := map[payment.ID][]fact{}
	rows, err := pool.Query(ctx, `SELECT payment_id::text, kind, amount FROM ledger_facts ORDER BY kind`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var f fact
		if err := rows.Scan(&id, &f.kind, &f.amount); err != nil {
			t.Fatal(err)
		}
		got[payment.ID(id)] = append(got[payment.ID(id)], f)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[payment.ID][]fact{
		authorized: {{"authorization", 2500}},
		captured:   {{"authorization", 2500}, {"capture", 2000}},
		refunded:   {{"authorization", 2500}, {"capture", 2000}, {"refund", 2000}},
		canceled:   {{"authorization", 2500}, {"cancellation", 2500}},
	}
	for id, w := range want {
		if !slices.Equal(got[id], w) {
			t.Errorf("payment %s: ledger_facts lists %v, want %v", id, got[id], w)
		}
	}
}
