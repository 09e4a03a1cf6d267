package paymentstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// List implements payments.Repository with keyset pagination on the index
// payments_merchant_created_idx (merchant_id, created_at DESC, id DESC):
// the cursor is a row comparison, never an
// OFFSET, so a page costs one index range however deep it is. A page before
// a cursor reads the index the other way, nearest first, and is turned
// round here.
func (r *Repository) List(ctx context.Context, q payments.PaymentQuery) ([]*payment.Payment, error) {
	sql, args := listSQL(q)
	rows, err := r.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, postgres.Unavailable(fmt.Errorf("list payments: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*payment.Payment, error) { return scanPayment(row) })
	if err != nil {
		return nil, postgres.Unavailable(fmt.Errorf("list payments: %w", err))
	}
	if q.Before != nil {
		slices.Reverse(out)
	}
	return out, nil
}

// listSQL is the statement List sends for q, and its arguments. Each filter
// is a clause only when set, so that every clause of a prepared statement's
// generic plan bounds the index range or filters it; none is an "OR $n IS
// NULL" that would keep the cursor from bounding the range.
func listSQL(q payments.PaymentQuery) (string, []any) {
	var (
		where = []string{"merchant_id = $1"}
		args  = []any{q.MerchantID}
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	order := "DESC"
	if q.After != nil {
		where = append(where, fmt.Sprintf("(created_at, id) < (%s, %s)", arg(q.After.CreatedAt), arg(string(q.After.ID))))
	}
	if q.Before != nil {
		where = append(where, fmt.Sprintf("(created_at, id) > (%s, %s)", arg(q.Before.CreatedAt), arg(string(q.Before.ID))))
		order = "ASC"
	}
	if q.Status != "" {
		where = append(where, "status = "+arg(string(q.Status)))
	}
	if !q.CreatedGTE.IsZero() {
		where = append(where, "created_at >= "+arg(q.CreatedGTE))
	}
	if !q.CreatedLT.IsZero() {
		where = append(where, "created_at < "+arg(q.CreatedLT))
	}
	limit := arg(q.Limit)
	return `SELECT ` + paymentColumns + `
		FROM payments WHERE ` + strings.Join(where, " AND ") + `
		ORDER BY created_at ` + order + `, id ` + order + ` LIMIT ` + limit, args
}
