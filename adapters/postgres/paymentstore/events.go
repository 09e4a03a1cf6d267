package paymentstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// The published contract is a CloudEvents 1.0 structured JSON document whose
// data matches the JSON Schema its dataschema names, a file in api/events; one
// example of each event type, byte for byte, is in docs/events. The wire
// structs are written out field by field on purpose — never json.Marshal a
// domain type: its unexported fields would encode as {}, and any refactoring
// of the entity would silently change what consumers get.
const (
	specVersion = "1.0"
	eventSource = "/payments"
	// timeLayout is RFC 3339 in UTC with milliseconds, e.g. 2026-11-29T12:00:00.123Z.
	timeLayout = "2006-01-02T15:04:05.000Z07:00"
)

// wireForm is how one event type is published: the version of its data and
// the function that renders an event as that version's wire struct.
type wireForm struct {
	dataVersion string
	data        func(payment.Event) (any, error)
}

// wireForms is the producer's registry: one entry per event type the domain
// declares (a test reads domain/payment and fails naming a type that has
// none). The relay needs nothing more: it publishes any outbox row. A
// breaking change to an event's data adds a new wire struct and bumps the
// entry's data version; consumers accept both versions for a while.
var wireForms = map[string]wireForm{
	payment.TypeCreated: wire("1", func(e payment.Created) any {
		return createdV1{
			PaymentID: string(e.PaymentID), Amount: e.Amount.Minor(), Currency: e.Amount.Currency(),
			PayerID: e.PayerID, MerchantID: e.MerchantID,
		}
	}),
	payment.TypeRefunded: wire("1", func(e payment.Refunded) any {
		return refundedV1{
			PaymentID: string(e.PaymentID), RefundID: string(e.RefundID),
			Amount: e.Amount.Minor(), Currency: e.Amount.Currency(),
			PayerID: e.PayerID, MerchantID: e.MerchantID, RefundedAmount: e.RefundedTotal.Minor(),
		}
	}),
}

// wire makes a registry entry from a function of one event's own Go type, so
// that an entry reads the event's fields, not a type switch.
func wire[E payment.Event](dataVersion string, data func(E) any) wireForm {
	return wireForm{dataVersion: dataVersion, data: func(e payment.Event) (any, error) {
		ev, ok := e.(E)
		if !ok {
			return nil, fmt.Errorf("encode event: the wire form of %s takes a %T, got a %T", e.EventType(), *new(E), e)
		}
		return data(ev), nil
	}}
}

type cloudEvent struct {
	SpecVersion     string `json:"specversion"`
	ID              string `json:"id"`
	Type            string `json:"type"`
	Source          string `json:"source"`
	Subject         string `json:"subject"`
	Time            string `json:"time"`
	DataContentType string `json:"datacontenttype"`
	// DataSchema is the $id of the data's JSON Schema in api/events, which
	// names its version: CloudEvents' own attribute for what DataVersion said.
	DataSchema string `json:"dataschema"`
	// DataVersion is deprecated: the ledger reads DataSchema first, but a
	// ledger deployed before it existed reads only this, and would dead-letter
	// every event without it during a rolling deploy. Drop it once no such
	// consumer is left.
	DataVersion string `json:"dataversion"`
	Data        any    `json:"data"`
	// TraceParent and TraceState are the CloudEvents distributed-tracing
	// extension: the W3C trace context of the write that recorded the event,
	// left out when it was not traced. The envelope's schema allows extension
	// attributes, and consumers ignore those they do not know.
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
}

// traceContext is the W3C trace context of a write, stored with each of its
// outbox rows and in each of its events; empty when the write was not traced.
type traceContext struct{ parent, state string }

// createdV1 is the data of payment.created, dataversion 1.
type createdV1 struct {
	PaymentID  string `json:"payment_id"`
	Amount     int64  `json:"amount"`
	Currency   string `json:"currency"`
	PayerID    string `json:"payer_id"`
	MerchantID string `json:"merchant_id"`
}

// refundedV1 is the data of payment.refunded, dataversion 1. It repeats the
// parties so a consumer can post the refund before it has seen the payment.
type refundedV1 struct {
	PaymentID      string `json:"payment_id"`
	RefundID       string `json:"refund_id"`
	Amount         int64  `json:"amount"` // this refund
	Currency       string `json:"currency"`
	PayerID        string `json:"payer_id"`
	MerchantID     string `json:"merchant_id"`
	RefundedAmount int64  `json:"refunded_amount"` // total after this refund
}

// encodeEvent renders e as the CloudEvents document published under message
// id, with the trace context tc of the write that recorded it.
func encodeEvent(id string, e payment.Event, tc traceContext) ([]byte, error) {
	form, ok := wireForms[e.EventType()]
	if !ok {
		return nil, fmt.Errorf("encode event: %q has no wire form in the producer registry", e.EventType())
	}
	data, err := form.data(e)
	if err != nil {
		return nil, err
	}
	return json.Marshal(cloudEvent{
		SpecVersion: specVersion, ID: id, Type: e.EventType(), Source: eventSource,
		Subject: string(e.AggregateID()), Time: e.OccurredAt().UTC().Format(timeLayout),
		DataContentType: "application/json", DataSchema: api.EventSchemaID(e.EventType(), form.dataVersion),
		DataVersion: form.dataVersion, Data: data, TraceParent: tc.parent, TraceState: tc.state,
	})
}

// storedResult is the idempotency_keys.result document: the state the first
// response was rendered from, so that a retry is answered byte for byte alike.
type storedResult struct {
	Payment storedPayment `json:"payment"`
	Refund  *storedRefund `json:"refund,omitempty"`
}

type storedPayment struct {
	ID          string    `json:"id"`
	Amount      int64     `json:"amount"`
	Currency    string    `json:"currency"`
	Refunded    int64     `json:"refunded_amount"`
	Status      string    `json:"status"`
	PayerID     string    `json:"payer_id"`
	MerchantID  string    `json:"merchant_id"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

type storedRefund struct {
	ID        string    `json:"id"`
	Amount    int64     `json:"amount"`
	CreatedAt time.Time `json:"created_at"`
}

func toStored(s payment.Snapshot, r *payment.Refund) storedResult {
	out := storedResult{Payment: storedPayment{
		ID: string(s.ID), Amount: s.AmountMinor, Currency: s.Currency, Refunded: s.RefundedMinor,
		Status: string(s.Status), PayerID: s.PayerID, MerchantID: s.MerchantID,
		Description: s.Description, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
	}}
	if r != nil {
		out.Refund = &storedRefund{ID: string(r.ID), Amount: r.Amount.Minor(), CreatedAt: r.CreatedAt}
	}
	return out
}

func (o storedResult) decode() (*payment.Payment, *payment.Refund, error) {
	sp := o.Payment
	p, err := payment.Rehydrate(payment.Snapshot{
		ID: payment.ID(sp.ID), AmountMinor: sp.Amount, Currency: sp.Currency, RefundedMinor: sp.Refunded,
		Status: payment.Status(sp.Status), PayerID: sp.PayerID, MerchantID: sp.MerchantID,
		Description: sp.Description, CreatedAt: sp.CreatedAt, UpdatedAt: sp.UpdatedAt,
	})
	if err != nil {
		return nil, nil, err
	}
	if o.Refund == nil {
		return p, nil, nil
	}
	amount, err := payment.NewMoney(o.Refund.Amount, sp.Currency)
	if err != nil {
		return nil, nil, err
	}
	return p, &payment.Refund{ID: payment.RefundID(o.Refund.ID), PaymentID: p.ID(), Amount: amount, CreatedAt: o.Refund.CreatedAt.UTC()}, nil
}
