package paymentstore

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// paymentRow is the payments table, mapped once: each column and the field
// of payment.Snapshot it holds. The INSERT, the UPDATE (every column but
// the key), every SELECT and its scan, and the payment in the result stored
// with an idempotency key are all derived from it, so a field is carried
// everywhere or nowhere — and TestEverySnapshotFieldHasAColumn fails naming
// a Snapshot field that no column holds. An UPDATE that forgot a column
// would commit the change's event while the row lacked the change.
var paymentRow = table[payment.Snapshot]{
	name: "payments",
	key:  "id",
	columns: []column[payment.Snapshot]{
		{"id", func(s *payment.Snapshot) any { return &s.ID }, false},
		{"amount", func(s *payment.Snapshot) any { return &s.AmountMinor }, false},
		{"refunded_amount", func(s *payment.Snapshot) any { return &s.RefundedMinor }, false},
		{"currency", func(s *payment.Snapshot) any { return &s.Currency }, false},
		{"status", func(s *payment.Snapshot) any { return &s.Status }, false},
		{"payer_id", func(s *payment.Snapshot) any { return &s.PayerID }, false},
		{"merchant_id", func(s *payment.Snapshot) any { return &s.MerchantID }, false},
		{"description", func(s *payment.Snapshot) any { return &s.Description }, false},
		{"created_at", func(s *payment.Snapshot) any { return &s.CreatedAt }, false},
		{"updated_at", func(s *payment.Snapshot) any { return &s.UpdatedAt }, false},
		{"capture_method", func(s *payment.Snapshot) any { return &s.CaptureMethod }, false},
		{"amount_captured", func(s *payment.Snapshot) any { return &s.CapturedMinor }, false},
		{"capture_before", func(s *payment.Snapshot) any { return &s.CaptureBefore }, true},
		{"captured_at", func(s *payment.Snapshot) any { return &s.CapturedAt }, true},
		{"canceled_at", func(s *payment.Snapshot) any { return &s.CanceledAt }, true},
		{"cancellation_reason", func(s *payment.Snapshot) any { return &s.CancellationReason }, true},
	},
}

// refundRecord is a payment.Refund as a row of refunds holds it: its amount
// in minor units of its payment's currency, which the row does not repeat.
type refundRecord struct {
	ID        payment.RefundID
	PaymentID payment.ID
	Amount    int64
	CreatedAt time.Time
}

func recordOf(r payment.Refund) refundRecord {
	return refundRecord{ID: r.ID, PaymentID: r.PaymentID, Amount: r.Amount.Minor(), CreatedAt: r.CreatedAt}
}

func (r refundRecord) refund(currency string) (payment.Refund, error) {
	amount, err := payment.NewMoney(r.Amount, currency)
	if err != nil {
		return payment.Refund{}, fmt.Errorf("refund %s: %w", r.ID, err)
	}
	return payment.Refund{ID: r.ID, PaymentID: r.PaymentID, Amount: amount, CreatedAt: r.CreatedAt.UTC()}, nil
}

// refundRow is the refunds table, mapped once as paymentRow is: its INSERT
// and the refund in a stored result derive from it.
var refundRow = table[refundRecord]{
	name: "refunds",
	key:  "id",
	columns: []column[refundRecord]{
		{"id", func(r *refundRecord) any { return &r.ID }, false},
		{"payment_id", func(r *refundRecord) any { return &r.PaymentID }, false},
		{"amount", func(r *refundRecord) any { return &r.Amount }, false},
		{"created_at", func(r *refundRecord) any { return &r.CreatedAt }, false},
	},
}

// The statements derived from the tables, built once.
var (
	insertPaymentSQL = paymentRow.insert()
	updatePaymentSQL = paymentRow.update()
	insertRefundSQL  = refundRow.insert()
	// paymentColumns is the select list of every read of a payment (get,
	// List), in the order paymentRow.scan reads it.
	paymentColumns = paymentRow.names()
)

// column is one column of a table and the field of T it holds.
type column[T any] struct {
	name string
	// field returns a pointer to the field of *T the column holds: where a
	// write reads the value and a read stores it.
	field func(*T) any
	// null stores the field's zero value as NULL (and reads NULL as it).
	null bool
}

// table is a table's columns, mapped to the fields of T.
type table[T any] struct {
	name    string
	key     string // the primary key's column: what an UPDATE finds the row by
	columns []column[T]
}

// names is the column list: "id, amount, …".
func (t table[T]) names() string {
	names := make([]string, len(t.columns))
	for i, c := range t.columns {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// insert is INSERT INTO t (every column) VALUES ($1, …), for values.
func (t table[T]) insert() string {
	ps := make([]string, len(t.columns))
	for i := range t.columns {
		ps[i] = "$" + strconv.Itoa(i+1)
	}
	return "INSERT INTO " + t.name + " (" + t.names() + ") VALUES (" + strings.Join(ps, ", ") + ")"
}

// update is UPDATE t SET every column but the key WHERE key = its
// parameter, for values: every column, so that none can be left behind.
func (t table[T]) update() string {
	var set []string
	where := ""
	for i, c := range t.columns {
		p := "$" + strconv.Itoa(i+1)
		if c.name == t.key {
			where = c.name + " = " + p
			continue
		}
		set = append(set, c.name+" = "+p)
	}
	return "UPDATE " + t.name + " SET " + strings.Join(set, ", ") + " WHERE " + where
}

// values are v's fields in column order, as statement arguments. A string
// of a named type (payment.ID) is passed as a plain string: for a named
// string type pgx first tries the binary uuid format, fails, builds an
// error with fmt.Errorf and only then falls back to text, on every
// parameter of every request; a plain string goes straight to text.
func (t table[T]) values(v *T) []any {
	out := make([]any, len(t.columns))
	for i, c := range t.columns {
		f := reflect.ValueOf(c.field(v)).Elem()
		switch {
		case c.null && f.IsZero():
			out[i] = nil
		case f.Kind() == reflect.String:
			out[i] = f.String()
		default:
			out[i] = f.Interface()
		}
	}
	return out
}

// scan reads one row of names() into v.
func (t table[T]) scan(row pgx.Row, v *T) error {
	dest := make([]any, len(t.columns))
	var nullable []func()
	for i, c := range t.columns {
		field := c.field(v)
		if !c.null {
			dest[i] = field
			continue
		}
		// A NULL is scanned into a nil pointer, and leaves the field zero.
		holder := reflect.New(reflect.TypeOf(field)) // **F
		dest[i] = holder.Interface()
		nullable = append(nullable, func() {
			if p := holder.Elem(); !p.IsNil() {
				reflect.ValueOf(field).Elem().Set(p.Elem())
			}
		})
	}
	if err := row.Scan(dest...); err != nil {
		return err
	}
	for _, set := range nullable {
		set()
	}
	return nil
}

// document is v as a JSON object keyed by column name, NULL as null: the
// form a stored idempotent result holds a row in.
func (t table[T]) document(v *T) map[string]any {
	values := t.values(v)
	doc := make(map[string]any, len(t.columns))
	for i, c := range t.columns {
		doc[c.name] = values[i]
	}
	return doc
}

// fromDocument reads a document into v: every column must be there but a
// nullable one, which absent or null is the field's zero value.
func (t table[T]) fromDocument(doc map[string]json.RawMessage, v *T) error {
	for _, c := range t.columns {
		raw, ok := doc[c.name]
		if !ok || string(raw) == "null" {
			if !c.null {
				return fmt.Errorf("%s: no %s", t.name, c.name)
			}
			continue
		}
		if err := json.Unmarshal(raw, c.field(v)); err != nil {
			return fmt.Errorf("%s: %s: %w", t.name, c.name, err)
		}
	}
	return nil
}
