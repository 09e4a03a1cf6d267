// Package ledgerstore is the ledger service's Postgres adapter: the shared
// inbox (inboxstore) with the ledger's repository bound to its transactions
// and savepoints, the read queries behind the HTTP API, and the read-only
// view of the payments database that `ledger reconcile` compares against.
package ledgerstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/inboxstore"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// Store implements the inbox's and the ledger's ports on the ledger
// database: the inbox's are inboxstore's, with the ledger's repository
// (ledgers.Ledger) bound to each transaction and savepoint, and the
// ledger's refusals of a commit mapped to its errors. It starts no span:
// adapters/ledgertracing decorates it (ledgertracing.Traced).
type Store struct {
	*inboxstore.Store[ledgers.Ledger]
	pool *pgxpool.Pool
}

var (
	_ inbox.Recorder[ledgers.Ledger] = (*Store)(nil)
	_ inbox.Backlog[ledgers.Ledger]  = (*Store)(nil)
	_ inbox.Admin                    = (*Store)(nil)
	_ ledgers.Reader                 = (*Store)(nil)
	_ ledgers.LedgerFacts            = (*Store)(nil)
)

// New returns a Store on pool, a pool on the migrated ledger database.
func New(pool *pgxpool.Pool) *Store {
	repos := func(tx inboxstore.Tx) ledgers.Ledger { return ledgerRepo{tx: tx} }
	return &Store{Store: inboxstore.New(pool, repos), pool: pool}
}

// Record implements inbox.Recorder (inboxstore.Store.Record), apply writing
// with the ledger repository bound to the message's transaction. A deferred
// constraint, such as the balance check, fails at COMMIT; a balance taken
// past int64 there is ledger.ErrBalanceLimit, and inbox.ErrPermanent. A
// message costs three round trips (BEGIN + inbox insert, posting, COMMIT).
func (s *Store) Record(ctx context.Context, msg inbox.Message, apply func(context.Context, ledgers.Ledger) (string, error)) (bool, error) {
	inserted, err := s.Store.Record(ctx, msg, apply)
	return inserted, balanceLimit(err)
}

// ClaimPending implements inbox.Backlog (inboxstore.Store.ClaimPending),
// each row's savepoint with the ledger repository bound to it. A commit that
// would take a balance past int64 fails with ledger.ErrBalanceLimit, and
// inbox.ErrPermanent.
func (s *Store) ClaimPending(ctx context.Context, c inbox.Claim, fn func(context.Context, []inbox.PendingMessage, inbox.ApplyFunc[ledgers.Ledger]) (inbox.BatchResult, error)) (int, error) {
	n, err := s.Store.ClaimPending(ctx, c, fn)
	return n, balanceLimit(err)
}

// balanceLimit wraps err in ledger.ErrBalanceLimit when it is SQLSTATE
// 22003, numeric_value_out_of_range: the commit's trigger found a balance
// that would pass bigint (ledger_balance_limit). Its message names the account.
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

// ledgerRepo is the ledger's repository in a transaction or a savepoint of
// the inbox's.
type ledgerRepo struct{ tx inboxstore.Tx }

// postSQL inserts the transaction and its entries in one statement (one
// round trip). ON CONFLICT DO NOTHING without a target covers both unique
// constraints, message id and business key: a conflict inserts no
// transaction, so the entries' SELECT finds no row and inserts nothing, and
// the statement returns zero rows. At commit, a deferred trigger checks that
// the transaction balances and adds its entries to their accounts' balances.
const postSQL = `
WITH t AS (
	INSERT INTO ledger_transactions (message_id, payment_id, kind, fact_id, amount, currency, occurred_at, posted_at)
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
	var factID *string // NULL for a kind a payment has at most once
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

// postedSQL finds the fact a fact of fact id $3 depends on: the payment's
// transaction of kind $2 with that fact id, or with none. The business key's
// index (payment_id, kind, fact_id) answers it.
const postedSQL = `
SELECT EXISTS (
	SELECT 1 FROM ledger_transactions
	WHERE payment_id = $1 AND kind = $2 AND (fact_id IS NULL OR fact_id = $3))`

// Posted implements ledgers.Ledger.Posted.
func (l ledgerRepo) Posted(ctx context.Context, paymentID string, kind ledger.Kind, factID string) (bool, error) {
	var fact *string // NULL: only a fact with none matches
	if factID != "" {
		fact = &factID
	}
	var posted bool
	// A batch of one, as Payment reads.
	var b pgx.Batch
	b.Queue(postedSQL, paymentID, string(kind), fact)
	br := l.tx.SendBatch(ctx, &b)
	err := br.QueryRow().Scan(&posted)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("read the posted %s of payment %s: %w", kind, paymentID, err)
	}
	return posted, nil
}

// paymentSQL reads what the ledger knows of a payment, locking its row for
// the transaction: a capture and a refund of one payment applied side by
// side take turns.
const paymentSQL = `
SELECT merchant_account, currency, coalesce(amount_authorized, 0), held, amount_captured, amount_refunded,
       coalesce(placed_at, 'epoch'), coalesce(released_at, 'epoch')
FROM ledger_payments WHERE payment_id = $1 FOR UPDATE`

// Payment implements ledgers.Ledger.Payment.
func (l ledgerRepo) Payment(ctx context.Context, id string) (ledger.Payment, error) {
	var (
		merchant                             string
		currency                             string
		authorized, held, captured, refunded int64
		placedAt, releasedAt                 time.Time
	)
	// A batch of one: the way an inboxstore.Tx reads a row (as the
	// transaction's first statement, it travels with BEGIN).
	var b pgx.Batch
	b.Queue(paymentSQL, id)
	br := l.tx.SendBatch(ctx, &b)
	err := br.QueryRow().Scan(&merchant, &currency, &authorized, &held, &captured, &refunded, &placedAt, &releasedAt)
	if cerr := br.Close(); err == nil || errors.Is(err, pgx.ErrNoRows) {
		if cerr != nil {
			err = cerr
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Payment{}, fmt.Errorf("%w: %s", ledger.ErrPaymentNotFound, id)
	}
	if err != nil {
		return ledger.Payment{}, fmt.Errorf("read ledger payment: %w", err)
	}
	acc, err := ledger.ParseAccountID(merchant)
	if err != nil {
		return ledger.Payment{}, fmt.Errorf("stored payment %s: %w", id, err)
	}
	return ledger.RehydratePayment(id, acc, currency, authorized, held, captured, refunded, unepoch(placedAt), unepoch(releasedAt)), nil
}

func unepoch(t time.Time) time.Time {
	if t.Equal(time.Unix(0, 0)) {
		return time.Time{}
	}
	return t
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// AddPayment implements ledgers.Ledger.AddPayment.
func (l ledgerRepo) AddPayment(ctx context.Context, p ledger.Payment, at time.Time) (bool, error) {
	var authorized *int64
	if a := p.Authorized(); a > 0 {
		authorized = &a
	}
	var capturedAt *time.Time
	if p.Captured() > 0 {
		capturedAt = &at
	}
	tag, err := l.tx.Exec(ctx, `
		INSERT INTO ledger_payments (payment_id, merchant_account, currency, amount_authorized, held, amount_captured,
		                             amount_refunded, placed_at, captured_at, released_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (payment_id) DO NOTHING`,
		p.ID(), p.Merchant().String(), p.Currency(), authorized, p.Held(), p.Captured(), p.Refunded(),
		nullTime(p.PlacedAt()), capturedAt, nullTime(p.ReleasedAt()), at)
	if err != nil {
		return false, paymentLimit(fmt.Errorf("add ledger payment: %w", err))
	}
	return tag.RowsAffected() > 0, nil
}

// SavePayment implements ledgers.Ledger.SavePayment.
func (l ledgerRepo) SavePayment(ctx context.Context, p ledger.Payment, at time.Time) error {
	tag, err := l.tx.Exec(ctx, `
		UPDATE ledger_payments
		SET held = $2, amount_captured = $3, amount_refunded = $4, released_at = $5, updated_at = $6,
		    captured_at = CASE WHEN amount_captured <> $3 THEN $6 ELSE captured_at END
		WHERE payment_id = $1`,
		p.ID(), p.Held(), p.Captured(), p.Refunded(), nullTime(p.ReleasedAt()), at)
	if err != nil {
		return paymentLimit(fmt.Errorf("save ledger payment: %w", err))
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("%w: %s", ledger.ErrPaymentNotFound, p.ID())
	}
	return nil
}

// paymentLimits maps each CHECK of ledger_payments to the refusal it is:
// the database holds the domain's limits, and a write the domain let
// through past one is refused for good, as the domain would have.
var paymentLimits = map[string]error{
	"ledger_payments_held_check":     ledger.ErrCaptureExceedsHold,
	"ledger_payments_captured_check": ledger.ErrCaptureExceedsHold,
	"ledger_payments_refunded_check": ledger.ErrRefundExceedsCaptured,
	"ledger_payments_hold_check":     ledger.ErrHoldReleased,
}

func paymentLimit(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23514" {
		if limit, ok := paymentLimits[pgErr.ConstraintName]; ok {
			return fmt.Errorf("%w: %w", limit, err)
		}
	}
	return err
}

// Balances reads the account's balances, one row per currency, from
// ledger_balances, which every posting's transaction keeps: one index
// lookup, however long the account's history.
func (s *Store) Balances(ctx context.Context, account ledger.AccountID) ([]ledger.Balance, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT currency, posted, pending FROM ledger_balances
		WHERE account_id = $1 ORDER BY currency`, account.String())
	if err != nil {
		return nil, postgres.Unavailable(fmt.Errorf("query balances: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.Balance, error) {
		var (
			currency        string
			posted, pending int64
		)
		err := r.Scan(&currency, &posted, &pending)
		return ledger.RehydrateBalance(account, currency, posted, pending), err
	})
	if err != nil {
		return nil, postgres.Unavailable(fmt.Errorf("query balances: %w", err))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s", ledger.ErrAccountNotFound, account)
	}
	return out, nil
}

// balancesAsOfSQL is the account's balances at $2: the current row less the
// entries posted after $2 (the BRIN index on posted_at finds them) and,
// for a merchant, its pending less the holds placed after $2 that are
// still open, plus those placed by $2 and released after it.
const balancesAsOfSQL = `
WITH later AS (
	SELECT e.currency, sum(e.amount) AS amount
	FROM ledger_transactions t JOIN ledger_entries e ON e.transaction_id = t.id
	WHERE t.posted_at > $2 AND e.account_id = $1
	GROUP BY e.currency
), holds AS (
	SELECT currency, sum(CASE WHEN placed_at > $2 THEN CASE WHEN released_at IS NULL THEN -amount_authorized ELSE 0 END
	                          ELSE amount_authorized END) AS amount
	FROM ledger_payments
	WHERE merchant_account = $1 AND (placed_at > $2 OR released_at > $2)
	GROUP BY currency
), at AS (
	SELECT b.currency, b.posted - coalesce(l.amount, 0) AS posted, b.pending + coalesce(h.amount, 0) AS pending
	FROM ledger_balances b LEFT JOIN later l USING (currency) LEFT JOIN holds h USING (currency)
	WHERE b.account_id = $1
)
SELECT currency, posted::bigint, pending::bigint FROM at
WHERE posted <> 0 OR pending <> 0
ORDER BY currency`

// BalancesAsOf implements ledgers.Reader.BalancesAsOf.
func (s *Store) BalancesAsOf(ctx context.Context, account ledger.AccountID, asOf time.Time) ([]ledger.Balance, error) {
	rows, err := s.pool.Query(ctx, balancesAsOfSQL, account.String(), asOf)
	if err != nil {
		return nil, postgres.Unavailable(fmt.Errorf("query balances as of %s: %w", asOf, err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.Balance, error) {
		var (
			currency        string
			posted, pending int64
		)
		err := r.Scan(&currency, &posted, &pending)
		return ledger.RehydrateBalance(account, currency, posted, pending), err
	})
	if err != nil {
		return nil, postgres.Unavailable(fmt.Errorf("query balances as of %s: %w", asOf, err))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s as of %s", ledger.ErrAccountNotFound, account, asOf.UTC().Format(time.RFC3339))
	}
	return out, nil
}

// PaymentTransactions returns the payment's transactions with their entries,
// oldest first.
func (s *Store) PaymentTransactions(ctx context.Context, paymentID string) ([]ledger.Transaction, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT t.message_id::text, t.payment_id::text, t.kind, coalesce(t.fact_id::text, ''), t.amount, t.currency,
		       t.occurred_at, e.account_id, e.amount, e.currency
		FROM ledger_transactions t JOIN ledger_entries e ON e.transaction_id = t.id
		WHERE t.payment_id = $1
		ORDER BY t.id, e.id`, paymentID)
	if err != nil {
		return nil, postgres.Unavailable(fmt.Errorf("query payment transactions: %w", err))
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
			return nil, postgres.Unavailable(fmt.Errorf("scan payment transaction: %w", err))
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
		return nil, postgres.Unavailable(fmt.Errorf("query payment transactions: %w", err))
	}
	flush()
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s", ledger.ErrPaymentNotFound, paymentID)
	}
	return out, nil
}

// LedgerFacts returns every posted transaction for reconciliation, with its
// entries, and the holds: an authorization fact per hold placed (its
// authorized amount), a cancellation fact per hold released with nothing
// captured, neither with entries. It is one statement, one snapshot.
func (s *Store) LedgerFacts(ctx context.Context) ([]ledgers.Fact, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT t.payment_id::text, t.kind, coalesce(t.fact_id::text, ''), t.amount, t.currency, t.occurred_at,
		       array_agg(e.account_id ORDER BY e.id), array_agg(e.amount ORDER BY e.id), array_agg(e.currency ORDER BY e.id)
		FROM ledger_transactions t JOIN ledger_entries e ON e.transaction_id = t.id
		GROUP BY t.id
		UNION ALL
		SELECT payment_id::text, 'authorization', '', amount_authorized, currency, placed_at, '{}', '{}', '{}'
		FROM ledger_payments WHERE amount_authorized IS NOT NULL
		UNION ALL
		SELECT payment_id::text, 'cancellation', '', amount_authorized, currency, released_at, '{}', '{}', '{}'
		FROM ledger_payments WHERE released_at IS NOT NULL AND amount_captured = 0`)
	if err != nil {
		return nil, fmt.Errorf("query ledger transactions: %w", postgres.Unavailable(err))
	}
	facts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledgers.Fact, error) {
		var (
			f          ledgers.Fact
			accounts   []string
			amounts    []int64
			currencies []string
		)
		if err := r.Scan(&f.PaymentID, &f.Kind, &f.FactID, &f.Amount, &f.Currency, &f.At, &accounts, &amounts, &currencies); err != nil {
			return f, err
		}
		for i, name := range accounts {
			acc, err := ledger.ParseAccountID(name)
			if err != nil {
				return f, fmt.Errorf("stored entry of %s: %w", f, err)
			}
			f.Entries = append(f.Entries, ledger.RehydrateEntry(acc, amounts[i], currencies[i]))
		}
		return f, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the ledger's facts: %w", postgres.Unavailable(err))
	}
	return facts, nil
}
