package ledgerstore_test

import (
	"context"
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
	"github.com/payments-outbox/payments-outbox/application/posting"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// chartVersion is the migration that introduces the chart of accounts.
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
// and leaves the ledger append-only; the Down restores the old names.
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
	if _, err := pool.Exec(ctx, `UPDATE ledger_entries SET amount = amount`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("after the migration an UPDATE of entries: got %v, want the append-only trigger to refuse it", err)
	}

	// The migrated ledger posts and reads as a new one.
	if _, err := provider.Up(ctx); err != nil {
		t.Fatal(err)
	}
	store := ledgerstore.New(pool)
	svc := posting.NewService(store, store, schemas(t), time.Now)
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
