package ledgerstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
)

// PaymentsDB reads the payments service's database for `ledger reconcile`.
// It lives with the ledger because reconciliation is the ledger's question,
// but it reads only the view ledger_facts, in which the payments service
// states every fact the ledger must have posted, and between which parties
// (migrations/payments, which says how to extend it). So the ledger knows none of
// the payments tables, a new kind of fact needs nothing here, and the role
// it connects as needs SELECT on that view alone.
type PaymentsDB struct {
	pool *pgxpool.Pool
}

var _ ledgers.PaymentFacts = (*PaymentsDB)(nil)

// NewPaymentsDB returns a reader on a pool to the payments database.
func NewPaymentsDB(pool *pgxpool.Pool) *PaymentsDB {
	return &PaymentsDB{pool: pool}
}

// PaymentFacts returns every fact in ledger_facts, with its parties. It is
// one statement, so it reads one snapshot: a refund never appears without
// its payment.
func (p *PaymentsDB) PaymentFacts(ctx context.Context) ([]ledgers.Fact, error) {
	rows, err := p.pool.Query(ctx, `
		SELECT payment_id::text, kind, coalesce(fact_id::text, ''), amount, currency, occurred_at, merchant_id, payer_id
		FROM ledger_facts`)
	if err != nil {
		return nil, fmt.Errorf("query payments: %w", postgres.Unavailable(err))
	}
	facts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledgers.Fact, error) {
		var f ledgers.Fact
		err := r.Scan(&f.PaymentID, &f.Kind, &f.FactID, &f.Amount, &f.Currency, &f.At, &f.Parties.Merchant, &f.Parties.Payer)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the payments database's facts: %w", postgres.Unavailable(err))
	}
	return facts, nil
}
