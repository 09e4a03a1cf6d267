package ledgerstore

import (
	"context"
	"fmt"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// AccountEntries implements ledgers.Reader with keyset pagination on
// ledger_entries_account_id_idx (account_id, id DESC), migrations/ledger:
// the page is the index range below the cursor, never an OFFSET. Each
// entry comes with its transaction and every leg of it, read by
// transaction id, in the same statement.
func (s *Store) AccountEntries(ctx context.Context, q ledgers.EntryQuery) ([]ledgers.AccountEntry, error) {
	account := q.Account.String()
	if q.After != 0 {
		var ok bool
		err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ledger_entries WHERE id = $1 AND account_id = $2)`,
			q.After, account).Scan(&ok)
		if err != nil {
			return nil, postgres.Unavailable(fmt.Errorf("read the cursor's entry: %w", err))
		}
		if !ok {
			return nil, fmt.Errorf("%w: %d", ledgers.ErrUnknownCursor, q.After)
		}
	}
	sql, args := entriesSQL(q)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, postgres.Unavailable(fmt.Errorf("query account entries: %w", err))
	}
	defer rows.Close()
	var (
		out     []ledgers.AccountEntry
		cur     int64 // the page's entry the rows are legs of
		posting ledger.Posting
		legs    []ledger.Entry
		mine    ledger.Entry
	)
	flush := func() {
		if cur != 0 {
			out = append(out, ledgers.AccountEntry{ID: cur, Entry: mine, Transaction: ledger.RehydrateTransaction(posting, legs)})
		}
	}
	for rows.Next() {
		var (
			id, legID int64
			p         ledger.Posting
			name      string
			amount    int64
			currency  string
		)
		if err := rows.Scan(&id, &p.MessageID, &p.PaymentID, &p.Kind, &p.FactID, &p.Amount, &p.Currency, &p.OccurredAt,
			&legID, &name, &amount, &currency); err != nil {
			return nil, postgres.Unavailable(fmt.Errorf("scan account entry: %w", err))
		}
		if id != cur {
			flush()
			cur, posting, legs = id, p, nil
		}
		acc, err := ledger.ParseAccountID(name)
		if err != nil {
			return nil, fmt.Errorf("stored entry: %w", err)
		}
		leg := ledger.RehydrateEntry(acc, amount, currency)
		if legID == id {
			mine = leg
		}
		legs = append(legs, leg)
	}
	if err := rows.Err(); err != nil {
		return nil, postgres.Unavailable(fmt.Errorf("query account entries: %w", err))
	}
	flush()
	return out, nil
}

// entriesSQL is the statement AccountEntries sends for q, and its
// arguments. The page without a cursor is a text of its own, not one with
// "$3 = 0 OR id < $3": a generic plan of that could not make the cursor a
// bound of the index range, and would read the account's entries from its
// newest down to the cursor, as an OFFSET would.
func entriesSQL(q ledgers.EntryQuery) (string, []any) {
	below, args := "", []any{q.Account.String(), q.Limit}
	if q.After != 0 {
		below, args = "AND id < $3", append(args, q.After)
	}
	return `
		WITH page AS (
			SELECT id, transaction_id FROM ledger_entries
			WHERE account_id = $1 ` + below + `
			ORDER BY id DESC LIMIT $2)
		SELECT page.id, t.message_id::text, t.payment_id::text, t.kind, coalesce(t.fact_id::text, ''), t.amount, t.currency,
		       t.occurred_at, e.id, e.account_id, e.amount, e.currency
		FROM page JOIN ledger_transactions t ON t.id = page.transaction_id
		JOIN ledger_entries e ON e.transaction_id = t.id
		ORDER BY page.id DESC, e.id`, args
}
