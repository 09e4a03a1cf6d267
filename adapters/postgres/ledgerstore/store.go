// Package ledgerstore is the ledger service's Postgres adapter: the inbox and
// ledger repositories that share one transaction (inbox.Transactor, with the
// ledger's bookkeeping.Ledger bound to it), the read queries behind the HTTP
// API, inbox cleanup, and the read-only view of the payments database that
// `ledger reconcile` compares against.
package ledgerstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/bookkeeping"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/retention"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// Store implements the inbox's and the ledger's ports on the ledger database.
// It knows nothing of tracing beyond storing a message's trace id:
// adapters/tracing decorates it (tracing.Ledger).
type Store struct {
	pool *pgxpool.Pool
}

var (
	_ inbox.Transactor[bookkeeping.Ledger] = (*Store)(nil)
	_ inbox.Backlog[bookkeeping.Ledger]    = (*Store)(nil)
	_ inbox.Admin                          = (*Store)(nil)
	_ bookkeeping.Reader                   = (*Store)(nil)
	_ bookkeeping.LedgerFacts              = (*Store)(nil)

	_ retention.DeleteFunc = (*Store)(nil).DeleteInboxBefore
)

// New returns a Store on pool, a pool on the migrated ledger database.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool}
}

// Transact runs fn in one database transaction with the inbox and ledger
// repositories bound to it: it commits when fn returns nil, rolls back
// otherwise, and returns the commit's error (a deferred constraint, such as
// the balance check, fails at COMMIT; a balance taken past int64 there is
// ledger.ErrBalanceLimit, and inbox.ErrPermanent).
//
// It runs on postgres.Transact, so BEGIN is sent in the same pipeline as the
// transaction's first statement instead of on its own: a message costs three
// round trips (BEGIN + inbox insert, posting, COMMIT) instead of
// pgx.BeginFunc's four, and round trips are what the consumer spends its
// time on.
func (s *Store) Transact(ctx context.Context, fn func(context.Context, inbox.Inbox, bookkeeping.Ledger) error) error {
	return balanceLimit(postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
		return fn(ctx, inboxRepo{tx: tx}, ledgerRepo{tx: tx})
	}))
}

// balanceLimit wraps err in ledger.ErrBalanceLimit when it is SQLSTATE
// 22003, numeric_value_out_of_range: the commit's trigger found a balance
// that would pass bigint (migration 00006). Its message names the account.
// A retry would be refused the same way, so it is inbox.ErrPermanent too:
// the inbox parks the message.
func balanceLimit(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "22003" {
		return fmt.Errorf("%w: %w: %w", inbox.ErrPermanent, ledger.ErrBalanceLimit, err)
	}
	return err
}

// Ping reports whether the database answers; /readyz uses it.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// execer is what the repositories write through: the consumer's
// postgres.Tx, or a savepoint of the processor's claim transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

type inboxRepo struct{ tx execer }

// Insert is the first layer of idempotency: the primary key on the message id
// turns a redelivery into zero inserted rows. The row keeps the trace id of
// the message, which the consumer put in ctx (NULL when it carried none).
func (i inboxRepo) Insert(ctx context.Context, msg inbox.Message) (bool, error) {
	var traceID *string
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		id := sc.TraceID().String()
		traceID = &id
	}
	var processed *time.Time
	if !msg.ProcessedAt.IsZero() {
		processed = &msg.ProcessedAt
	}
	var errText *string
	if msg.Error != "" {
		errText = &msg.Error
	}
	var parked *time.Time // a parked row was tried once: attempts = 1
	if !msg.ParkedAt.IsZero() {
		parked = &msg.ParkedAt
	}
	tag, err := i.tx.Exec(ctx, `
		INSERT INTO inbox_messages (id, type, payload, received_at, processed_at, error, trace_id, parked_at, attempts)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, CASE WHEN $8::timestamptz IS NULL THEN 0 ELSE 1 END)
		ON CONFLICT (id) DO NOTHING`,
		msg.ID, msg.Type, string(msg.Payload), msg.ReceivedAt, processed, errText, traceID, parked)
	if err != nil {
		return false, fmt.Errorf("insert inbox message: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Annotate sets the error/note column of one inbox row.
func (i inboxRepo) Annotate(ctx context.Context, id, note string) error {
	if _, err := i.tx.Exec(ctx, `UPDATE inbox_messages SET error = $2 WHERE id = $1`, id, note); err != nil {
		return fmt.Errorf("annotate inbox message: %w", err)
	}
	return nil
}

type ledgerRepo struct{ tx execer }

// postSQL inserts the transaction and its entries in one statement (one
// round trip). ON CONFLICT DO NOTHING without a target covers both unique
// constraints, message id and business key: a conflict inserts no
// transaction, so the entries' SELECT finds no row and inserts nothing, and
// the statement returns zero rows. At commit, a deferred trigger checks that
// the transaction balances and adds its entries to their accounts' balances.
const postSQL = `
WITH t AS (
	INSERT INTO ledger_transactions (message_id, payment_id, kind, refund_id, amount, currency, occurred_at, posted_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
	ON CONFLICT DO NOTHING
	RETURNING id
)
INSERT INTO ledger_entries (transaction_id, account_id, amount, currency)
SELECT t.id, e.account_id, e.amount, e.currency
FROM t, unnest($9::text[], $10::bigint[], $11::text[]) WITH ORDINALITY AS e(account_id, amount, currency, n)
ORDER BY e.n`

// Post stores tx and its entries; false means the business key or message
// id was already posted (the second layer of idempotency).
func (l ledgerRepo) Post(ctx context.Context, tx ledger.Transaction, postedAt time.Time) (bool, error) {
	entries := tx.Entries()
	accounts := make([]string, len(entries))
	amounts := make([]int64, len(entries))
	currencies := make([]string, len(entries))
	for i, e := range entries {
		accounts[i], amounts[i], currencies[i] = e.Account().String(), e.Amount(), e.Currency()
	}
	var factID *string // stored in refund_id, the column's name from when refunds were the only kind with one
	if id := tx.FactID(); id != "" {
		factID = &id
	}
	tag, err := l.tx.Exec(ctx, postSQL,
		tx.MessageID(), tx.PaymentID(), string(tx.Kind()), factID, tx.Amount(), tx.Currency(),
		tx.OccurredAt(), postedAt, accounts, amounts, currencies)
	if err != nil {
		return false, fmt.Errorf("post ledger transaction: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}

// Balances reads the account's balances, one row per currency, from
// ledger_balances, which every posting's transaction keeps: one index
// lookup, however long the account's history.
func (s *Store) Balances(ctx context.Context, account ledger.AccountID) ([]ledger.Balance, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT currency, posted FROM ledger_balances
		WHERE account_id = $1 ORDER BY currency`, account.String())
	if err != nil {
		return nil, readErr(fmt.Errorf("query balances: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.Balance, error) {
		var (
			currency string
			amount   int64
		)
		err := r.Scan(&currency, &amount)
		return ledger.RehydrateBalance(account, currency, amount), err
	})
	if err != nil {
		return nil, readErr(fmt.Errorf("query balances: %w", err))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s", ledger.ErrAccountNotFound, account)
	}
	return out, nil
}

// PaymentTransactions returns the payment's transactions with their entries,
// oldest first.
func (s *Store) PaymentTransactions(ctx context.Context, paymentID string) ([]ledger.Transaction, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT t.message_id::text, t.payment_id::text, t.kind, coalesce(t.refund_id::text, ''), t.amount, t.currency,
		       t.occurred_at, e.account_id, e.amount, e.currency
		FROM ledger_transactions t JOIN ledger_entries e ON e.transaction_id = t.id
		WHERE t.payment_id = $1
		ORDER BY t.id, e.id`, paymentID)
	if err != nil {
		return nil, readErr(fmt.Errorf("query payment transactions: %w", err))
	}
	defer rows.Close()
	var (
		out     []ledger.Transaction
		cur     ledger.Posting
		entries []ledger.Entry
	)
	flush := func() {
		if cur.MessageID != "" {
			out = append(out, ledger.RehydrateTransaction(cur, entries))
		}
	}
	for rows.Next() {
		var (
			p        ledger.Posting
			account  string
			amount   int64
			currency string
		)
		if err := rows.Scan(&p.MessageID, &p.PaymentID, &p.Kind, &p.FactID, &p.Amount, &p.Currency, &p.OccurredAt,
			&account, &amount, &currency); err != nil {
			return nil, readErr(fmt.Errorf("scan payment transaction: %w", err))
		}
		if p.MessageID != cur.MessageID {
			flush()
			cur, entries = p, nil
		}
		acc, err := ledger.ParseAccountID(account)
		if err != nil {
			return nil, fmt.Errorf("stored entry: %w", err)
		}
		entries = append(entries, ledger.RehydrateEntry(acc, amount, currency))
	}
	if err := rows.Err(); err != nil {
		return nil, readErr(fmt.Errorf("query payment transactions: %w", err))
	}
	flush()
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s", ledger.ErrPaymentNotFound, paymentID)
	}
	return out, nil
}

// readErr wraps a read query's error in bookkeeping.ErrUnavailable when the
// database could not be reached, so the API answers an outage 503 with
// Retry-After, as the payments API does, instead of 500.
func readErr(err error) error {
	if postgres.IsUnavailable(err) {
		return fmt.Errorf("%w: %w", bookkeeping.ErrUnavailable, err)
	}
	return err
}

// DeleteInboxBefore is the inbox's retention.DeleteFunc: it deletes at most
// limit processed inbox rows received before cutoff, in one statement.
// Start-up checks the cutoff lies past the broker's redelivery window
// (inbox.CheckRetention). A row not processed — pending, parked, or of a
// type this version does not handle — is never deleted here: it is work not
// done, and the inbox is the only place that still holds it. Unhandled rows
// have a window of their own (DeleteUnhandled).
func (s *Store) DeleteInboxBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM inbox_messages WHERE id IN (
			SELECT id FROM inbox_messages
			WHERE received_at < $1 AND processed_at IS NOT NULL LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("delete inbox messages: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// DeleteUnhandled implements inbox.Admin: the expiry of the rows of types
// this version does not apply (inbox.Processor.ExpireUnhandled). Its WHERE
// holds the predicate of the partial pending index, so it reads the backlog,
// not the processed rows. FOR UPDATE SKIP LOCKED passes over a row a claim
// holds — a processor of a newer version, during a rolling deploy, applying
// the type this one does not know — and re-checks each row it locks, so a
// row that such a processor applied or parked meanwhile is left alone.
func (s *Store) DeleteUnhandled(ctx context.Context, types []string, cutoff time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM inbox_messages WHERE id IN (
			SELECT id FROM inbox_messages
			WHERE processed_at IS NULL AND parked_at IS NULL AND received_at < $2
			  AND NOT type = ANY($1::text[])
			ORDER BY received_at
			LIMIT $3
			FOR UPDATE SKIP LOCKED)`, types, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("delete unhandled inbox messages: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// LedgerFacts returns every posted transaction for reconciliation.
func (s *Store) LedgerFacts(ctx context.Context) ([]bookkeeping.Fact, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT payment_id::text, kind, coalesce(refund_id::text, ''), amount, currency, occurred_at
		FROM ledger_transactions`)
	if err != nil {
		return nil, fmt.Errorf("query ledger transactions: %w", err)
	}
	return collectFacts(rows)
}

func collectFacts(rows pgx.Rows) ([]bookkeeping.Fact, error) {
	facts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (bookkeeping.Fact, error) {
		var f bookkeeping.Fact
		err := r.Scan(&f.PaymentID, &f.Kind, &f.FactID, &f.Amount, &f.Currency, &f.At)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("read facts: %w", err)
	}
	return facts, nil
}
