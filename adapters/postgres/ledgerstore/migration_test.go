package ledgerstore_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// chartVersion is the migration that introduces the chart of accounts and
// ledger_balances.
const chartVersion = 6

// oldLedger is a ledger database migrated up to the version before the
// chart of accounts, with a goose provider to move it on.
func oldLedger(t *testing.T) (*pgxpool.Pool, *goose.Provider) {
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
	if _, err := provider.UpTo(ctx, chartVersion-1); err != nil {
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
