package paymentstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
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

// TestPreviousReleaseSurvivesThePayloadMigration: during a rolling update the
// previous release keeps running on connections that prepared their
// statements while outbox.payload was jsonb. After the migration that makes
// it json, its writer still commits payments with their events, and its
// relay's claim succeeds at the latest on its retry (pgx drops a prepared
// statement whose result type changed, after failing it once), reading every
// payload as JSON.
func TestPreviousReleaseSurvivesThePayloadMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	migrator, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer migrator.Close()
	db := stdlib.OpenDBFromPool(migrator)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, paymentsmigrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.UpTo(ctx, 8); err != nil {
		t.Fatal(err)
	}

	// The previous release: one connection, so that every statement it runs
	// after the migration is one it prepared before.
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	old, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	// Its writes, as that release's paymentstore queued them: the payment
	// row without the columns later migrations add (00011's trigger fills
	// amount_captured), and the outbox row.
	create := func() {
		t.Helper()
		p, err := payment.New(payment.ID(uuid.NewString()), 1050, "BRL", "cus_1", "mer_1", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		msgID := uuid.Must(uuid.NewV7())
		payload, err := payments.EncodeEvent(msgID.String(), p.PullEvents()[0], payments.TraceContext{})
		if err != nil {
			t.Fatal(err)
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO payments (id, amount, refunded_amount, currency, status, payer_id, merchant_id, description, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			string(p.ID()), int64(1050), int64(0), "BRL", "created", "cus_1", "mer_1", "", p.CreatedAt(), p.UpdatedAt())
		b.Queue(`INSERT INTO outbox (id, type, aggregate_id, payload, traceparent, tracestate) VALUES ($1, $2, $3, $4, $5, $6)`,
			pgtype.UUID{Bytes: msgID, Valid: true}, payment.TypeCreated, string(p.ID()), payload, "", "")
		if err := old.SendBatch(ctx, b).Close(); err != nil {
			t.Fatalf("the previous release's write: %v", err)
		}
	}
	store := outboxstore.New(old)
	claim := func() ([]outbox.Message, error) {
		var got []outbox.Message
		_, err := store.Claim(ctx, 10, func(_ context.Context, msgs []outbox.Message) outbox.Result {
			got = msgs
			return outbox.Result{} // nothing recorded: the rows stay PENDING
		})
		return got, err
	}
	create()
	if _, err := claim(); err != nil {
		t.Fatal(err)
	}

	if _, err := provider.Up(ctx); err != nil {
		t.Fatal(err)
	}
	create()
	got, err := claim()
	if err != nil {
		t.Logf("the first claim after the migration: %v", err)
		got, err = claim()
	}
	if err != nil {
		t.Fatalf("the previous release's relay cannot claim after the migration: %v", err)
	}
	if len(got) != 2 {
		t.Fatalf("claimed %d rows, want both payments' events", len(got))
	}
	for _, m := range got {
		if !json.Valid(m.Payload) {
			t.Errorf("payload of %s is not JSON: %q", m.ID, m.Payload)
		}
	}
	if _, err := provider.DownTo(ctx, 8); err != nil {
		t.Fatalf("down: %v", err)
	}
}
