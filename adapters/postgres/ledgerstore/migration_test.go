package ledgerstore_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// chartVersion is the migration that introduces the chart of accounts and
// ledger_balances.
const chartVersion = 6

// oldLedger is a ledger database migrated up to the version before the
// chart of accounts, with a goose provider to move it on.
func oldLedger(t *testing.T) (*pgxpool.Pool, *goose.Provider) {
	t.Helper()
	return ledgerAt(t, chartVersion-1)
}

// ledgerAt is a ledger database migrated up to version, with a goose
// provider to move it on.
func ledgerAt(t *testing.T, version int64) (*pgxpool.Pool, *goose.Provider) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { db.Close() })
	provider, err := goose.NewProvider(goose.DialectPostgres, db, ledgermigrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.UpTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	return pool, provider
}

// postOld writes a transaction as the ledger did before the chart: its
// entries on the raw ids, debit first.
func postOld(t *testing.T, pool *pgxpool.Pool, kind, debit, credit string, amount int64, currency string) {
	t.Helper()
	ctx := context.Background()
	var refundID *string
	if kind == "refund" {
		id := uuid.NewString()
		refundID = &id
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, `INSERT INTO ledger_transactions (message_id, payment_id, kind, refund_id, amount, currency, occurred_at)
			VALUES (gen_random_uuid(), gen_random_uuid(), $1, $2, $3, $4, now()) RETURNING id`, kind, refundID, amount, currency).Scan(&id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO ledger_entries (transaction_id, account_id, amount, currency) VALUES ($1, $2, $3, $5), ($1, $4, $6, $5)`,
			id, debit, -amount, credit, currency, amount)
		return err
	})
	if err != nil {
		t.Fatalf("post %s %s → %s: %v", kind, debit, credit, err)
	}
}

func entryNames(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT account_id || ' ' || amount || ' ' || currency FROM ledger_entries ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestChartOfAccountsMigration: on a ledger written before the chart of
// accounts — the cross-merchant attack's rows included — the migration
// renames every entry's account by its role (a payment's credit and a
// refund's debit are the merchant's, the other leg that merchant's payer),
// fills ledger_balances with the sums of the renamed entries, and leaves the
// ledger append-only; the Down restores the old names.
func TestChartOfAccountsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, provider := oldLedger(t)
	postOld(t, pool, "payment", "cus_1", "mer_1", 1050, "BRL")
	postOld(t, pool, "refund", "mer_1", "cus_1", 300, "BRL")
	postOld(t, pool, "payment", "cus_1", "mer_1", 7, "USD")
	postOld(t, pool, "payment", "cus_1", "mer_2", 500, "BRL") // the same payer id at another merchant
	postOld(t, pool, "payment", "cus_b", "mer_B", 100, "JPY") // mer_B's own sale
	// The attack: mer_A's key sent payer_id "mer_B", and the old ledger
	// debited mer_B's own account.
	postOld(t, pool, "payment", "mer_B", "mer_A", 12345, "JPY")
	postOld(t, pool, "refund", "m:1%", "ü x", 1, "BRL") // ids that need encoding
	old := entryNames(t, pool)
	if got := count(t, pool, `SELECT sum(amount)::int FROM ledger_entries WHERE account_id = 'mer_B'`); got != 100-12345 {
		t.Fatalf("before: mer_B sums to %d, want %d (the attack moved it)", got, 100-12345)
	}

	if _, err := provider.UpTo(ctx, chartVersion); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"payer:mer_1:cus_1 -1050 BRL", "merchant:mer_1 1050 BRL",
		"merchant:mer_1 -300 BRL", "payer:mer_1:cus_1 300 BRL",
		"payer:mer_1:cus_1 -7 USD", "merchant:mer_1 7 USD",
		"payer:mer_2:cus_1 -500 BRL", "merchant:mer_2 500 BRL",
		"payer:mer_B:cus_b -100 JPY", "merchant:mer_B 100 JPY",
		"payer:mer_A:mer_B -12345 JPY", "merchant:mer_A 12345 JPY",
		"merchant:m%3A1%25 -1 BRL", "payer:m%3A1%25:%C3%BC%20x 1 BRL",
	}
	if got := entryNames(t, pool); !slices.Equal(got, want) {
		t.Errorf("entries after the migration:\ngot  %q\nwant %q", got, want)
	}
	wantBalances := map[string]int64{
		"merchant:mer_1 BRL": 750, "merchant:mer_1 USD": 7, "payer:mer_1:cus_1 BRL": -750, "payer:mer_1:cus_1 USD": -7,
		"merchant:mer_2 BRL": 500, "payer:mer_2:cus_1 BRL": -500,
		"merchant:mer_B JPY": 100, "payer:mer_B:cus_b JPY": -100,
		"merchant:mer_A JPY": 12345, "payer:mer_A:mer_B JPY": -12345,
		"merchant:m%3A1%25 BRL": -1, "payer:m%3A1%25:%C3%BC%20x BRL": 1,
	}
	rows, err := pool.Query(ctx, `SELECT account_id || ' ' || currency, posted FROM ledger_balances`)
	if err != nil {
		t.Fatal(err)
	}
	gotBalances, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Key    string
		Posted int64
	}])
	if err != nil {
		t.Fatal(err)
	}
	if len(gotBalances) != len(wantBalances) {
		t.Errorf("ledger_balances: got %d rows %v, want %d", len(gotBalances), gotBalances, len(wantBalances))
	}
	for _, b := range gotBalances {
		if w, ok := wantBalances[b.Key]; !ok || w != b.Posted {
			t.Errorf("ledger_balances %s: got %d, want %d (present: %v)", b.Key, b.Posted, w, ok)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE ledger_entries SET amount = amount`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("after the migration an UPDATE of entries: got %v, want the append-only trigger to refuse it", err)
	}

	// The migrated ledger posts and reads as a new one: the balance the
	// migration filled goes on from there.
	if _, err := provider.Up(ctx); err != nil {
		t.Fatal(err)
	}
	store := ledgerstore.New(pool)
	svc := newBooks(t, store)
	if _, err := svc.Apply(ctx, newPayment(50, "cus_1", "mer_1").body()); err != nil {
		t.Fatal(err)
	}
	bs, err := svc.Balances(ctx, "payer:mer_1:cus_1")
	if err != nil || len(bs) != 2 || bs[0].Currency() != "BRL" || bs[0].Amount() != -800 {
		t.Errorf("payer:mer_1:cus_1: got %v, %v; want -800 BRL, -7 USD", bs, err)
	}
	bs, err = svc.Balances(ctx, "merchant:mer_B")
	if err != nil || len(bs) != 1 || bs[0].Amount() != 100 {
		t.Errorf("merchant:mer_B: got %v, %v; want 100 JPY, untouched by mer_A's payments", bs, err)
	}

	// Down: the old names again, the new entry's included, and still
	// append-only.
	if _, err := provider.DownTo(ctx, chartVersion-1); err != nil {
		t.Fatalf("down: %v", err)
	}
	if got := entryNames(t, pool); !slices.Equal(got[:len(old)], old) || !slices.Equal(got[len(old):], []string{"cus_1 -50 BRL", "mer_1 50 BRL"}) {
		t.Errorf("entries after the down migration:\ngot  %q\nwant %q and the new posting on cus_1 and mer_1", got, old)
	}
	if _, err := pool.Exec(ctx, `UPDATE ledger_entries SET amount = amount`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("after the down migration an UPDATE of entries: got %v, want the append-only trigger to refuse it", err)
	}
	if _, err := provider.UpTo(ctx, chartVersion); err != nil {
		t.Fatalf("up again: %v", err)
	}
}

// TestChartOfAccountsMigrationRefusesABalancePastInt64: an old ledger whose
// entries on one account sum past int64 — the two int64-max payments the old
// ledger posted — cannot be given a balance: the migration fails, naming the
// account, and leaves the database as it was, old names included.
func TestChartOfAccountsMigrationRefusesABalancePastInt64(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, provider := oldLedger(t)
	postOld(t, pool, "payment", "cus_1", "mer_big", math.MaxInt64, "BRL")
	postOld(t, pool, "payment", "cus_2", "mer_big", math.MaxInt64, "BRL")
	_, err := provider.UpTo(ctx, chartVersion)
	if err == nil || !strings.Contains(err.Error(), "merchant:mer_big") || !strings.Contains(err.Error(), fmt.Sprint(uint64(math.MaxInt64)*2)) {
		t.Fatalf("got %v, want the migration to fail naming merchant:mer_big and its sum", err)
	}
	if v, err := provider.GetDBVersion(ctx); err != nil || v != chartVersion-1 {
		t.Errorf("version: got %d, %v; want %d", v, err, chartVersion-1)
	}
	if n := count(t, pool, `SELECT count(*) FROM ledger_entries WHERE account_id = 'mer_big'`); n != 2 {
		t.Errorf("entries on the old name: got %d, want 2: the failed migration rolled back, the rename with it", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM pg_tables WHERE tablename = 'ledger_balances'`); n != 0 {
		t.Errorf("ledger_balances exists: the failed migration did not roll back")
	}
	if _, err := pool.Exec(ctx, `UPDATE ledger_entries SET amount = amount`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("after the failed migration an UPDATE of entries: got %v, want the append-only trigger to refuse it", err)
	}
}

// factIDVersion is the migration that renames refund_id to fact_id and keeps
// refund_id in step for the previous release.
const factIDVersion = 7

// The previous release's statements on ledger_transactions, as it sends
// them: it names the fact id refund_id. They must keep working while the new
// schema is applied beside it, in a rolling deploy.
const (
	previousPostSQL = `
WITH t AS (
	INSERT INTO ledger_transactions (message_id, payment_id, kind, refund_id, amount, currency, occurred_at, posted_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
	ON CONFLICT DO NOTHING
	RETURNING id
)
INSERT INTO ledger_entries (transaction_id, account_id, amount, currency)
SELECT t.id, e.account_id, e.amount, e.currency
FROM t, unnest($9::text[], $10::bigint[], $11::text[]) WITH ORDINALITY AS e(account_id, amount, currency, n)
ORDER BY e.n`
	previousFactsSQL = `SELECT payment_id::text, kind, coalesce(refund_id::text, ''), amount, currency, occurred_at FROM ledger_transactions`
)

// postPrevious posts a refund (fact a refund id) or a payment (fact "") of
// 100 BRL from mer_f to cus_f as the previous release does, and reports
// whether it inserted.
func postPrevious(t *testing.T, pool *pgxpool.Pool, paymentID, fact string) bool {
	t.Helper()
	kind, accounts := "payment", []string{"payer:mer_f:cus_f", "merchant:mer_f"}
	var factID *string
	if fact != "" {
		kind, accounts, factID = "refund", []string{"merchant:mer_f", "payer:mer_f:cus_f"}, &fact
	}
	tag, err := pool.Exec(context.Background(), previousPostSQL, uuid.NewString(), paymentID, kind, factID, 100, "BRL", time.Now(), time.Now(),
		accounts, []int64{-100, 100}, []string{"BRL", "BRL"})
	if err != nil {
		t.Fatalf("the previous release's posting of %s %q: %v", kind, fact, err)
	}
	return tag.RowsAffected() > 0
}

// factIDs returns "kind fact_id refund_id" of every transaction, in posting
// order; "-" for NULL.
func factIDs(t *testing.T, pool *pgxpool.Pool, withRefundID bool) []string {
	t.Helper()
	q := `SELECT kind || ' ' || coalesce(fact_id::text, '-') || ' ' || coalesce(refund_id::text, '-') FROM ledger_transactions ORDER BY id`
	if !withRefundID {
		q = `SELECT kind || ' ' || coalesce(fact_id::text, '-') FROM ledger_transactions ORDER BY id`
	}
	rows, err := pool.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestFactIDMigration: on a ledger with postings, the migration renames
// refund_id to fact_id, keeping the business key and the rule of the fixed
// kinds on it, and keeps refund_id equal to it for the previous release,
// which goes on posting, reading and reconciling beside this one: a fact it
// posts is a fact this release finds, and the same fact posted by both
// releases posts once. The Down brings refund_id back as it was.
func TestFactIDMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, provider := ledgerAt(t, factIDVersion-1)
	pay1, refund1 := uuid.NewString(), uuid.NewString()
	postPrevious(t, pool, pay1, "")
	postPrevious(t, pool, pay1, refund1)

	if _, err := provider.UpTo(ctx, factIDVersion); err != nil {
		t.Fatal(err)
	}
	if got, want := factIDs(t, pool, true), []string{"payment - -", "refund " + refund1 + " " + refund1}; !slices.Equal(got, want) {
		t.Fatalf("after the migration: got %q, want %q (fact_id holds the ids, refund_id their copy)", got, want)
	}

	// This release reads the previous one's rows, and its business key
	// refuses their facts under another message id.
	store := ledgerstore.New(pool)
	txs, err := store.PaymentTransactions(ctx, pay1)
	if err != nil || len(txs) != 2 || txs[1].FactID() != refund1 {
		t.Fatalf("PaymentTransactions: got %d, %v; want the payment and refund %s", len(txs), err, refund1)
	}
	again, err := ledger.NewTransfer(ledger.Posting{MessageID: uuid.NewString(), PaymentID: pay1, Kind: "refund", FactID: refund1,
		Payer: "cus_f", Merchant: "mer_f", Amount: 100, Currency: "BRL", OccurredAt: time.Now()}, declared(t, "refund"))
	if err != nil {
		t.Fatal(err)
	}
	var posted bool
	_, err = store.Record(ctx, inboxMessage(again), func(ctx context.Context, l ledgers.Ledger) (string, error) {
		posted, err = l.Post(ctx, again, time.Now())
		return "", err
	})
	if err != nil || posted {
		t.Errorf("the previous release's refund again, under another message id: posted %v, %v; want refused by the business key", posted, err)
	}
	refund2 := uuid.NewString()
	fresh, err := ledger.NewTransfer(ledger.Posting{MessageID: uuid.NewString(), PaymentID: pay1, Kind: "refund", FactID: refund2,
		Payer: "cus_f", Merchant: "mer_f", Amount: 100, Currency: "BRL", OccurredAt: time.Now()}, declared(t, "refund"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Record(ctx, inboxMessage(fresh), func(ctx context.Context, l ledgers.Ledger) (string, error) {
		posted, err = l.Post(ctx, fresh, time.Now())
		return "", err
	})
	if err != nil || !posted {
		t.Fatalf("a new refund: posted %v, %v", posted, err)
	}

	// The previous release, beside it: it posts under refund_id, and this
	// release's business key refuses what it posted already.
	if postPrevious(t, pool, pay1, refund2) {
		t.Error("the previous release posted again a refund this release posted: the business key must hold across the names")
	}
	pay2, refund3 := uuid.NewString(), uuid.NewString()
	if !postPrevious(t, pool, pay2, "") || !postPrevious(t, pool, pay2, refund3) {
		t.Fatal("the previous release could not post new facts on the new schema")
	}
	want := []string{"payment - -", "refund " + refund1 + " " + refund1, "refund " + refund2 + " " + refund2, "payment - -", "refund " + refund3 + " " + refund3}
	if got := factIDs(t, pool, true); !slices.Equal(got, want) {
		t.Errorf("rows of both releases: got %q, want %q", got, want)
	}
	// And it reads what both wrote, as reconcile does.
	rows, err := pool.Query(ctx, previousFactsSQL)
	if err != nil {
		t.Fatalf("the previous release's facts query: %v", err)
	}
	var facts []string
	for rows.Next() {
		var pay, kind, fact, currency string
		var amount int64
		var at time.Time
		if err := rows.Scan(&pay, &kind, &fact, &amount, &currency, &at); err != nil {
			t.Fatal(err)
		}
		if fact != "" {
			facts = append(facts, fact)
		}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	slices.Sort(facts)
	if wantFacts := slices.Sorted(slices.Values([]string{refund1, refund2, refund3})); !slices.Equal(facts, wantFacts) {
		t.Errorf("the previous release's reconcile reads fact ids %v, want %v", facts, wantFacts)
	}

	// The rule of the fixed kinds holds on fact_id; the two names cannot
	// disagree.
	for name, sql := range map[string]string{
		"a payment with a fact id": `INSERT INTO ledger_transactions (message_id, payment_id, kind, fact_id, amount, currency, occurred_at) VALUES (gen_random_uuid(), gen_random_uuid(), 'payment', gen_random_uuid(), 1, 'BRL', now())`,
		"a refund without one":     `INSERT INTO ledger_transactions (message_id, payment_id, kind, amount, currency, occurred_at) VALUES (gen_random_uuid(), gen_random_uuid(), 'refund', 1, 'BRL', now())`,
		"two names, two ids":       `INSERT INTO ledger_transactions (message_id, payment_id, kind, fact_id, refund_id, amount, currency, occurred_at) VALUES (gen_random_uuid(), gen_random_uuid(), 'refund', gen_random_uuid(), gen_random_uuid(), 1, 'BRL', now())`,
	} {
		if _, err := pool.Exec(ctx, sql); err == nil || !strings.Contains(err.Error(), "check") && !strings.Contains(err.Error(), "two names") {
			t.Errorf("%s: got %v, want the database to refuse it", name, err)
		}
	}

	// Down: refund_id is the column again, with every id, and the previous
	// release's posting still meets the business key.
	if _, err := provider.DownTo(ctx, factIDVersion-1); err != nil {
		t.Fatalf("down: %v", err)
	}
	var ids []string
	rows, err = pool.Query(ctx, `SELECT coalesce(refund_id::text, '-') FROM ledger_transactions ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if want := []string{"-", refund1, refund2, "-", refund3}; !slices.Equal(ids, want) {
		t.Errorf("refund_id after the down migration: got %q, want %q", ids, want)
	}
	if postPrevious(t, pool, pay2, refund3) {
		t.Error("after the down migration the business key no longer holds")
	}
	if _, err := provider.UpTo(ctx, factIDVersion); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if got := factIDs(t, pool, false); len(got) != 5 || got[4] != "refund "+refund3 {
		t.Errorf("after up again: %q", got)
	}
}

// TestHoldsMigration: 00008 gives every payment posted before it its record
// of what was captured and refunded, so that a refund after the upgrade is
// held to the same limit; a history that broke the rule keeps its entries
// and its payment starts at the limit. Down and up again keeps the ledger.
func TestHoldsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, provider := ledgerAt(t, 7)
	store := ledgerstore.New(pool)
	post := func(kind string, paymentID, factID string, amount int64) {
		t.Helper()
		tx, err := ledger.NewTransfer(ledger.Posting{MessageID: uuid.NewString(), PaymentID: paymentID, FactID: factID,
			Merchant: "mer_u", Payer: "cus_u", Amount: amount, Currency: "BRL", OccurredAt: time.Now()}, declared(t, ledger.Kind(kind)))
		if err != nil {
			t.Fatal(err)
		}
		msg := inbox.Message{ID: tx.MessageID(), Type: ledgers.TypePaymentCreated, Payload: []byte(`{}`), ReceivedAt: time.Now(), ProcessedAt: time.Now()}
		if _, err := store.Record(ctx, msg, func(ctx context.Context, l ledgers.Ledger) (string, error) {
			_, err := l.Post(ctx, tx, time.Now())
			return "", err
		}); err != nil {
			t.Fatal(err)
		}
	}
	paid, early := uuid.NewString(), uuid.NewString()
	post("payment", paid, "", 1000)
	post("refund", paid, uuid.NewString(), 300)
	post("refund", early, uuid.NewString(), 50) // before its payment, as refunds once posted
	if _, err := provider.UpTo(ctx, 8); err != nil {
		t.Fatalf("migrate to 00008: %v", err)
	}
	for id, want := range map[string][2]int64{paid: {1000, 300}, early: {0, 0}} {
		var captured, refunded int64
		if err := pool.QueryRow(ctx, `SELECT amount_captured, amount_refunded FROM ledger_payments WHERE payment_id = $1`, id).Scan(&captured, &refunded); err != nil {
			t.Fatalf("payment %s: %v", id, err)
		}
		if captured != want[0] || refunded != want[1] {
			t.Errorf("payment %s: got captured %d refunded %d, want %d and %d", id, captured, refunded, want[0], want[1])
		}
	}
	svc := newBooks(t, store)
	over := event{id: uuid.NewString(), paymentID: paid, refundID: uuid.NewString(), amount: 701, total: 1001, payer: "cus_u", merchant: "mer_u", at: time.Now()}
	if res, err := svc.Apply(ctx, over.body()); err != nil || res.Disposition != inbox.Parked {
		t.Errorf("a refund past the payment posted before the upgrade: got %v, %v; want parked", res.Disposition, err)
	}
	if _, err := provider.DownTo(ctx, 7); err != nil {
		t.Fatalf("down to 00007: %v", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if n := count(t, pool, `SELECT count(*) FROM ledger_payments`); n != 2 {
		t.Errorf("payments after down and up: got %d, want 2", n)
	}
}
