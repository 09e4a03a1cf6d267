package ledgerstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/application/posting"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// PaymentsDB reads the payments service's database for `ledger reconcile`.
// It lives with the ledger because reconciliation is the ledger's question;
// it only ever reads (the tables in paymentFacts) and should be given a
// read-only role in production.
type PaymentsDB struct {
	pool *pgxpool.Pool
}

var _ posting.PaymentFacts = (*PaymentsDB)(nil)

// paymentFacts holds, for each kind of fact the ledger posts (posting.Kinds),
// the query that lists those facts in the payments database as (payment id,
// fact id, amount, currency, created at). It is the one place besides the
// consumer's registry that a new kind needs — only this adapter knows the
// payments database's tables — and a test names it when a kind is missing.
var paymentFacts = map[ledger.Kind]string{
	"payment": `SELECT id::text, '', amount, currency, created_at FROM payments`,
	"refund": `SELECT r.payment_id::text, r.id::text, r.amount, p.currency, r.created_at
		FROM refunds r JOIN payments p ON p.id = r.payment_id`,
}

// NewPaymentsDB returns a reader on a pool to the payments database.
func NewPaymentsDB(pool *pgxpool.Pool) *PaymentsDB {
	return &PaymentsDB{pool: pool}
}

// PaymentFacts returns every fact of every kind in paymentFacts, each refund
// with its payment's currency. It is one statement, so it reads one snapshot:
// a refund never appears without its payment.
func (p *PaymentsDB) PaymentFacts(ctx context.Context) ([]posting.Fact, error) {
	kinds := slices.Sorted(maps.Keys(paymentFacts))
	parts := make([]string, len(kinds))
	args := make([]any, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("SELECT f.payment_id, $%d::text, f.fact_id, f.amount, f.currency, f.at FROM (%s) AS f(payment_id, fact_id, amount, currency, at)", i+1, paymentFacts[k])
		args[i] = string(k)
	}
	rows, err := p.pool.Query(ctx, strings.Join(parts, "\nUNION ALL\n"), args...)
	if err != nil {
		return nil, fmt.Errorf("query payments: %w", err)
	}
	return collectFacts(rows)
}
