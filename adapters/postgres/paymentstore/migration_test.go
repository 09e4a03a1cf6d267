package paymentstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// TestIdempotencyKeysGetTheirPaymentsMerchant: the migration that scopes
// idempotency keys per merchant gives every existing key its payment's
// merchant, so a retry of a request sent before the upgrade still replays.
func TestIdempotencyKeysGetTheirPaymentsMerchant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, paymentsmigrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.UpTo(ctx, 5); err != nil {
		t.Fatal(err)
	}
	const id = "00000000-0000-4000-8000-000000000001"
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, amount, currency, status, payer_id, merchant_id, created_at, updated_at)
		VALUES ($1, 100, 'BRL', 'created', 'cus_1', 'mer_7', now(), now())`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO idempotency_keys (key, fingerprint, payment_id, result) VALUES ('order-1', 'f', $1, '{}')`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatal(err)
	}
	var merchant string
	if err := pool.QueryRow(ctx, `SELECT merchant_id FROM idempotency_keys WHERE key = 'order-1'`).Scan(&merchant); err != nil {
		t.Fatal(err)
	}
	if merchant != "mer_7" {
		t.Errorf("the key's merchant after the migration = %q, want its payment's, mer_7", merchant)
	}
	// And back down: one key per key again.
	if _, err := provider.DownTo(ctx, 5); err != nil {
		t.Fatalf("down: %v", err)
	}
}
