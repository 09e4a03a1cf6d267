package ledgerstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/application/posting"
)

// PaymentsDB reads the payments service's database for `ledger reconcile`.
// It lives with the ledger because reconciliation is the ledger's question;
// it only ever reads (payments and refunds, SPEC §7) and should be given a
// read-only role in production.
type PaymentsDB struct {
	pool *pgxpool.Pool
}

var _ posting.PaymentFacts = (*PaymentsDB)(nil)

// NewPaymentsDB returns a reader on a pool to the payments database.
func NewPaymentsDB(pool *pgxpool.Pool) *PaymentsDB {
	return &PaymentsDB{pool: pool}
}

// PaymentFacts returns every payment and every refund, each refund with its
// payment's currency. It is one statement, so it reads one snapshot: a refund
// never appears without its payment.
func (p *PaymentsDB) PaymentFacts(ctx context.Context) ([]posting.Fact, error) {
	rows, err := p.pool.Query(ctx, `
		SELECT id::text, 'payment', '', amount, currency, created_at FROM payments
		UNION ALL
		SELECT r.payment_id::text, 'refund', r.id::text, r.amount, p.currency, r.created_at
		FROM refunds r JOIN payments p ON p.id = r.payment_id`)
	if err != nil {
		return nil, fmt.Errorf("query payments: %w", err)
	}
	return collectFacts(rows)
}
