package paymentmodel_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// invariant is a rule the model states of every row, as an SQL predicate
// (holds). A rule of one row is the database's too: constraint names the
// CHECK that holds it, and breaks is an UPDATE of the row $1 — a payment of
// kind, or a refund — that breaks this rule and no other, which the
// database must refuse naming that CHECK. A rule that spans rows, or that
// the domain keeps alone, has no constraint: the test checks it holds.
type invariant struct {
	rule       string
	table      string // payments or refunds
	holds      string
	constraint string
	kind       string // the payments the breaking write is tried on: an SQL predicate
	breaks     string
}

// statusList is the statuses of the state machine's table, as SQL.
func statusList() string {
	var quoted []string
	for _, s := range payment.Statuses() {
		quoted = append(quoted, "'"+string(s)+"'")
	}
	return strings.Join(quoted, ", ")
}

// invariants are the model's rules of a row. The money ones first: every
// amount positive, 0 ≤ refunded ≤ captured ≤ amount, the refunds adding up
// to the refunded amount.
func invariants() []invariant {
	const (
		authorized        = `status = 'authorized'`
		partCaptured      = `status = 'captured' AND amount_captured < amount`
		canceled          = `status = 'canceled'`
		breakPayment      = `UPDATE payments SET %s WHERE id = $1`
		manualOrAutomatic = `capture_method IN ('automatic', 'manual')`
	)
	return []invariant{
		{rule: "a payment's amount is positive", table: "payments", holds: `amount > 0`,
			constraint: "payments_amount_check", kind: authorized, breaks: fmt.Sprintf(breakPayment, `amount = 0`)},
		{rule: "0 ≤ refunded ≤ amount", table: "payments", holds: `refunded_amount >= 0 AND refunded_amount <= amount`,
			constraint: "payments_check", kind: authorized, breaks: fmt.Sprintf(breakPayment, `refunded_amount = -1`)},
		{rule: "0 ≤ captured ≤ amount", table: "payments", holds: `amount_captured >= 0 AND amount_captured <= amount`,
			constraint: "payments_amount_captured_check", kind: partCaptured, breaks: fmt.Sprintf(breakPayment, `amount_captured = amount + 1`)},
		{rule: "refunded ≤ captured", table: "payments", holds: `refunded_amount <= amount_captured`,
			constraint: "payments_refunded_captured_check", kind: partCaptured, breaks: fmt.Sprintf(breakPayment, `refunded_amount = amount_captured + 1`)},
		{rule: "a refund's amount is positive", table: "refunds", holds: `amount > 0`,
			constraint: "refunds_amount_check", breaks: `UPDATE refunds SET amount = 0 WHERE id = $1`},
		{rule: "the refunds add up to the refunded amount", table: "payments",
			holds: `refunded_amount = (SELECT coalesce(sum(r.amount), 0) FROM refunds r WHERE r.payment_id = payments.id)`},
		{rule: "an automatic payment captures all of its amount", table: "payments",
			holds: `capture_method <> 'automatic' OR amount_captured = amount`},
		{rule: "the status says how much was refunded", table: "payments", holds: `CASE status
			WHEN 'partially_refunded' THEN refunded_amount > 0 AND refunded_amount < amount_captured
			WHEN 'refunded' THEN refunded_amount > 0 AND refunded_amount = amount_captured
			ELSE refunded_amount = 0 END`,
			constraint: "payments_status_refunded_check", kind: partCaptured, breaks: fmt.Sprintf(breakPayment, `status = 'refunded'`)},

		{rule: "the currency is an ISO code", table: "payments", holds: `currency ~ '^[A-Z]{3}$'`,
			constraint: "payments_currency_check", kind: authorized, breaks: fmt.Sprintf(breakPayment, `currency = 'brl'`)},
		{rule: "the status is one of the state machine's", table: "payments", holds: `status IN (` + statusList() + `)`,
			constraint: "payments_status_check", kind: partCaptured, breaks: fmt.Sprintf(breakPayment, `status = 'lost'`)},
		{rule: "the capture method is automatic or manual", table: "payments", holds: manualOrAutomatic,
			constraint: "payments_capture_method_check", kind: partCaptured, breaks: fmt.Sprintf(breakPayment, `capture_method = 'later'`)},
		{rule: "a stage's columns are set exactly when the payment reached it", table: "payments",
			holds: `CASE capture_method WHEN 'automatic' THEN capture_before IS NULL AND captured_at IS NULL
				ELSE capture_before IS NOT NULL AND (captured_at IS NULL) = (amount_captured = 0)
					AND (status IN ('authorized', 'canceled')) = (amount_captured = 0) END`,
			constraint: "payments_capture_check", kind: partCaptured, breaks: fmt.Sprintf(breakPayment, `captured_at = NULL`)},
		{rule: "a canceled payment has its cancel's time and reason, no other has", table: "payments",
			holds:      `(status = 'canceled') = (canceled_at IS NOT NULL) AND (status = 'canceled') = (cancellation_reason IS NOT NULL)`,
			constraint: "payments_cancellation_check", kind: canceled, breaks: fmt.Sprintf(breakPayment, `canceled_at = NULL`)},
	}
}

// checkInvariantsHold checks that every row keeps every rule of the model.
func (w *world) checkInvariantsHold() {
	w.t.Helper()
	for _, inv := range invariants() {
		var broken int
		if err := w.payDB.QueryRow(w.ctx, `SELECT count(*) FROM `+inv.table+` WHERE NOT (`+inv.holds+`)`).Scan(&broken); err != nil {
			w.fatalf("%s: %v", inv.rule, err)
		}
		if broken > 0 {
			w.fatalf("%d row(s) of %s break the rule %q (%s)", broken, inv.table, inv.rule, inv.holds)
		}
	}
}

// checkInvariantsAreTheDatabases holds the database to the model's rules
// of a row: each is a CHECK of the schema, and each CHECK of payments and
// refunds is one of them; a write that breaks one rule is refused, naming
// its CHECK. A CHECK dropped from the schema fails here, though no code of
// the service writes a row that breaks it.
func (w *world) checkInvariantsAreTheDatabases() {
	w.t.Helper()
	rows, err := w.payDB.Query(w.ctx, `SELECT conname FROM pg_constraint
		WHERE contype = 'c' AND conrelid IN ('payments'::regclass, 'refunds'::regclass) ORDER BY conname`)
	if err != nil {
		w.fatalf("list the CHECKs: %v", err)
	}
	checks, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		w.fatalf("list the CHECKs: %v", err)
	}
	var stated []string
	for _, inv := range invariants() {
		if inv.constraint == "" {
			continue
		}
		stated = append(stated, inv.constraint)
		if !slices.Contains(checks, inv.constraint) {
			w.fatalf("the model's rule %q is held by the CHECK %s, which the schema does not have (its CHECKs: %v)", inv.rule, inv.constraint, checks)
		}
		w.tryToBreak(inv)
	}
	for _, c := range checks {
		if !slices.Contains(stated, c) {
			w.fatalf("the schema's CHECK %s is no rule of the model: state it in invariants (invariants_test.go)", c)
		}
	}
}

// tryToBreak makes inv's breaking write on a row of its kind, in a
// transaction it rolls back, and requires the database to refuse it with
// inv's CHECK.
func (w *world) tryToBreak(inv invariant) {
	w.t.Helper()
	pick := `SELECT id::text FROM refunds LIMIT 1`
	if inv.table == "payments" {
		pick = `SELECT id::text FROM payments WHERE ` + inv.kind + ` ORDER BY created_at LIMIT 1`
	}
	var id string
	if err := w.payDB.QueryRow(w.ctx, pick).Scan(&id); err != nil {
		w.fatalf("%s: no row to try the rule on (%s): %v", inv.rule, pick, err)
	}
	err := pgx.BeginFunc(w.ctx, w.payDB, func(tx pgx.Tx) error {
		if _, err := tx.Exec(w.ctx, inv.breaks, id); err != nil {
			return err
		}
		return errRollBack
	})
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, errRollBack):
		w.fatalf("the database accepted %s on %s %s, which breaks the rule %q: its CHECK %s is gone", inv.breaks, inv.table, id, inv.rule, inv.constraint)
	case !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != inv.constraint:
		w.fatalf("%s on %s %s: got %v, want the CHECK %s refusing it", inv.breaks, inv.table, id, err, inv.constraint)
	}
}

var errRollBack = errors.New("roll back")
