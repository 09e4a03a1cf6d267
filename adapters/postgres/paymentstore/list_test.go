package paymentstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// TestListReadsItsIndexInOrder: every shape of the list's statement is one
// range of payments_merchant_created_idx read in the list's order, with no
// Sort: what makes a page cost the same however deep it is. A change of
// the ORDER BY, the cursor's comparison or the index fails here, where
// nothing else would notice until a merchant with a long history did. The
// table of a test is nearly empty, so sequential and bitmap scans are off:
// the planner would rightly prefer them there, with a Sort of the few rows.
func TestListReadsItsIndexInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t, paymentsmigrations.FS)
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	pos := &payments.Position{CreatedAt: at, ID: payment.ID("00000000-0000-4000-8000-000000000001")}
	for name, q := range map[string]payments.PaymentQuery{
		"the first page":      {MerchantID: "mer_1", Limit: 11},
		"after a cursor":      {MerchantID: "mer_1", Limit: 11, After: pos},
		"before a cursor":     {MerchantID: "mer_1", Limit: 11, Before: pos},
		"with every filter":   {MerchantID: "mer_1", Limit: 11, After: pos, Status: payment.StatusCreated, CreatedGTE: at.Add(-time.Hour), CreatedLT: at},
		"before, with status": {MerchantID: "mer_1", Limit: 11, Before: pos, Status: payment.StatusRefunded},
	} {
		t.Run(name, func(t *testing.T) {
			sql, args := paymentstore.ListSQL(q)
			var plan []string
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off`); err != nil {
					return err
				}
				rows, err := tx.Query(ctx, "EXPLAIN "+sql, args...)
				if err != nil {
					return err
				}
				plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			text := strings.Join(plan, "\n")
			if !strings.Contains(text, "Index Scan") || !strings.Contains(text, "payments_merchant_created_idx") || strings.Contains(text, "Sort") {
				t.Errorf("the plan of\n%s\nis\n%s\nwant one Index Scan of payments_merchant_created_idx and no Sort", sql, text)
			}
		})
	}
}
