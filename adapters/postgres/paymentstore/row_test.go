package paymentstore

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/domain/payment"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// TestEverySnapshotFieldHasAColumn: every field of payment.Snapshot is held
// by exactly one column of paymentRow, and every field of refundRecord by
// one of refundRow. The INSERT, the UPDATE, the reads and the stored result
// all derive from these tables, so a field added to the domain's Snapshot
// fails here, naming it, until it has its column — and then it is written,
// updated, read and replayed alike.
func TestEverySnapshotFieldHasAColumn(t *testing.T) {
	t.Run("payments", func(t *testing.T) { requireEveryFieldMapped(t, paymentRow) })
	t.Run("refunds", func(t *testing.T) { requireEveryFieldMapped(t, refundRow) })
}

func requireEveryFieldMapped[T any](t *testing.T, tbl table[T]) {
	t.Helper()
	var v T
	fields := reflect.ValueOf(&v).Elem()
	holders := map[uintptr][]string{} // a field's address: the columns that hold it
	for _, c := range tbl.columns {
		p := reflect.ValueOf(c.field(&v)).Pointer()
		holders[p] = append(holders[p], c.name)
	}
	for i := range fields.NumField() {
		name := fields.Type().Field(i).Name
		switch cols := holders[fields.Field(i).Addr().Pointer()]; len(cols) {
		case 0:
			t.Errorf("%s.%s has no column in the %s table's mapping (row.go): add one, with its migration", fields.Type(), name, tbl.name)
		case 1:
		default:
			t.Errorf("%s.%s is held by the columns %v: one column per field", fields.Type(), name, cols)
		}
	}
	if !slices.Contains(strings.Split(tbl.names(), ", "), tbl.key) {
		t.Errorf("the %s table's key %q is none of its columns", tbl.name, tbl.key)
	}
}

// TestEveryColumnIsMapped: the tables' mappings name every column the
// migrations give payments and refunds, and no other. A column added by a
// migration and not mapped would be written by no INSERT or UPDATE.
func TestEveryColumnIsMapped(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	for name, mapped := range map[string]string{paymentRow.name: paymentRow.names(), refundRow.name: refundRow.names()} {
		rows, err := pool.Query(context.Background(),
			`SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY column_name`, name)
		if err != nil {
			t.Fatal(err)
		}
		inSchema, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Split(mapped, ", ")
		slices.Sort(want)
		if !slices.Equal(inSchema, want) {
			t.Errorf("table %s has the columns %v; its mapping (row.go) names %v", name, inSchema, want)
		}
	}
}

// TestUpdateSetsEveryColumnButTheKey: the UPDATE a change commits sets
// every mapped column, so a column cannot be written on INSERT and
// forgotten on UPDATE (the change's event committed, the row without it).
func TestUpdateSetsEveryColumnButTheKey(t *testing.T) {
	for _, c := range paymentRow.columns {
		set := c.name + " = $"
		if c.name == paymentRow.key {
			set = "WHERE " + set
		}
		if !strings.Contains(updatePaymentSQL, set) {
			t.Errorf("the UPDATE does not set %s: %s", c.name, updatePaymentSQL)
		}
	}
	var s payment.Snapshot
	if got, want := len(paymentRow.values(&s)), strings.Count(updatePaymentSQL, "$"); got != want {
		t.Errorf("the UPDATE takes %d parameters, values gives %d", want, got)
	}
}
