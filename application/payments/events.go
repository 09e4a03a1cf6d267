package payments

import (
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// This file is the payments service's event contract, on the producer's
// side: how each domain event is published. The published contract is a
// CloudEvents 1.0 structured JSON document whose data matches the JSON
// Schema its dataschema names, a file in api/events; one example of each
// event type, byte for byte, is in docs/events. The use cases encode each
// event a write records and hand storage the bytes, which the outbox keeps
// and the relay publishes unchanged. The wire structs are written out field
// by field on purpose — never json.Marshal a domain type: its unexported
// fields would encode as {}, and any refactoring of the entity would
// silently change what consumers get.
const (
	specVersion = "1.0"
	eventSource = "/payments"
	// timeLayout is RFC 3339 in UTC with milliseconds, e.g. 2026-11-29T12:00:00.123Z.
	timeLayout = "2006-01-02T15:04:05.000Z07:00"
	// deadlineLayout is RFC 3339 in UTC with microseconds, the precision a
	// payment's timestamps are stored with, so that a deadline in an event
	// is the one the payments API answers, not a rounding of it.
	deadlineLayout = "2006-01-02T15:04:05.000000Z07:00"
	// eventSchemaBase starts the dataschema of every event: the schema of
	// type T's data at version N is eventSchemaBase + "T/vN.json", the $id of
	// the file api/events/T/vN.json. It is the value of api.EventSchemaBase,
	// which the consumers' side reads, written again here because the
	// application imports nothing beyond the domain and two general-purpose
	// modules (imports_test.go); scripts/fork.sh renames both, and
	// TestPublishedEventsMatchTheirSchemas (api) fails if they differ.
	eventSchemaBase = "https://payments-outbox.example/schemas/events/"
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
	payment.TypeAuthorized: wire("1", func(e payment.Authorized) any {
		return authorizedV1{
			PaymentID: string(e.PaymentID), Amount: e.Amount.Minor(), Currency: e.Amount.Currency(),
			PayerID: e.PayerID, MerchantID: e.MerchantID, CaptureBefore: e.CaptureBefore.UTC().Format(deadlineLayout),
		}
	}),
	payment.TypeCaptured: wire("1", func(e payment.Captured) any {
		return capturedV1{
			PaymentID: string(e.PaymentID), Amount: e.Amount.Minor(), Currency: e.Amount.Currency(),
			PayerID: e.PayerID, MerchantID: e.MerchantID,
			AmountAuthorized: e.Authorized.Minor(), AmountReleased: e.ReleasedMinor(),
		}
	}),
	payment.TypeCanceled: wire("1", func(e payment.Canceled) any {
		return canceledV1{
			PaymentID: string(e.PaymentID), Amount: e.Amount.Minor(), Currency: e.Amount.Currency(),
			PayerID: e.PayerID, MerchantID: e.MerchantID, CancellationReason: string(e.Reason),
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

// cloudEvent is the envelope every event is published in: the CloudEvents
// 1.0 attributes in the structured JSON format, with the event's data.
type cloudEvent struct {
	SpecVersion     string `json:"specversion"`
	ID              string `json:"id"`
	Type            string `json:"type"`
	Source          string `json:"source"`
	Subject         string `json:"subject"`
	Time            string `json:"time"`
	DataContentType string `json:"datacontenttype"`
	// DataSchema is the $id of the data's JSON Schema in api/events, which
	// names its version (…/<type>/v<N>.json): CloudEvents' own attribute
	// for it, and the one consumers read.
	DataSchema string `json:"dataschema"`
	Data       any    `json:"data"`
	// TraceParent and TraceState are the CloudEvents distributed-tracing
	// extension: the W3C trace context of the call whose write recorded the
	// event, left out when it was not traced. The envelope's schema allows extension
	// attributes, and consumers ignore those they do not know.
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
}

// createdV1 is the data of payment.created, data version 1.
type createdV1 struct {
	PaymentID  string `json:"payment_id"`
	Amount     int64  `json:"amount"`
	Currency   string `json:"currency"`
	PayerID    string `json:"payer_id"`
	MerchantID string `json:"merchant_id"`
}

// refundedV1 is the data of payment.refunded, data version 1. It repeats the
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

// authorizedV1 is the data of payment.authorized, data version 1: an amount
// held for the merchant until capture_before, not yet moved.
type authorizedV1 struct {
	PaymentID     string `json:"payment_id"`
	Amount        int64  `json:"amount"` // authorized
	Currency      string `json:"currency"`
	PayerID       string `json:"payer_id"`
	MerchantID    string `json:"merchant_id"`
	CaptureBefore string `json:"capture_before"` // deadlineLayout
}

// capturedV1 is the data of payment.captured, data version 1. It carries the
// authorized amount and the part released, so that a consumer releases the
// whole hold without having to have seen the authorization's amount.
type capturedV1 struct {
	PaymentID        string `json:"payment_id"`
	Amount           int64  `json:"amount"` // captured now
	Currency         string `json:"currency"`
	PayerID          string `json:"payer_id"`
	MerchantID       string `json:"merchant_id"`
	AmountAuthorized int64  `json:"amount_authorized"`
	AmountReleased   int64  `json:"amount_released"` // amount_authorized - amount
}

// canceledV1 is the data of payment.canceled, data version 1: the whole
// authorized amount is released.
type canceledV1 struct {
	PaymentID          string `json:"payment_id"`
	Amount             int64  `json:"amount"` // released
	Currency           string `json:"currency"`
	PayerID            string `json:"payer_id"`
	MerchantID         string `json:"merchant_id"`
	CancellationReason string `json:"cancellation_reason"`
}

// outboxMessages encodes events, recorded by one write whose call has the
// trace context tc, as the outbox messages that write commits: each gets a
// new UUIDv7 id, the CloudEvents document EncodeEvent writes under it, and
// the call's trace context.
func outboxMessages(events []payment.Event, tc TraceContext) ([]outbox.Message, error) {
	msgs := make([]outbox.Message, 0, len(events))
	for _, e := range events {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("outbox message id: %w", err)
		}
		aggregate, err := uuid.Parse(string(e.AggregateID()))
		if err != nil {
			return nil, fmt.Errorf("outbox message of %s: aggregate id: %w", e.EventType(), err)
		}
		payload, err := EncodeEvent(id.String(), e, tc)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, outbox.Message{ID: id, Type: e.EventType(), AggregateID: aggregate, Payload: payload,
			TraceParent: tc.Parent, TraceState: tc.State})
	}
	return msgs, nil
}

// TraceContext is the W3C trace context (traceparent, tracestate) of the
// call that made a write. Each of the write's outbox rows stores it and each
// of its events carries it, as the CloudEvents distributed-tracing extension,
// so that the relay and the consumers continue the call's trace. It is the
// zero TraceContext when the call was not traced.
type TraceContext struct {
	Parent string // traceparent: version-traceid-parentid-flags
	State  string // tracestate: vendors' entries, often empty
}

// EncodeEvent renders e as the CloudEvents document published under message
// id, recorded by a write whose trace context is tc. The use cases encode
// every event with it; the tools (tools/loadgen, tools/faultsuite), which
// write outbox rows or send events without going through the service, use
// it too, so that their messages change when the published format does
// instead of drifting from it unnoticed. It fails for an event type with no
// entry in the registry.
func EncodeEvent(id string, e payment.Event, tc TraceContext) ([]byte, error) {
	form, ok := wireForms[e.EventType()]
	if !ok {
		return nil, fmt.Errorf("encode event: %q has no wire form in the producer registry (application/payments/events.go)", e.EventType())
	}
	data, err := form.data(e)
	if err != nil {
		return nil, err
	}
	return json.Marshal(cloudEvent{
		SpecVersion: specVersion, ID: id, Type: e.EventType(), Source: eventSource,
		Subject: string(e.AggregateID()), Time: e.OccurredAt().UTC().Format(timeLayout),
		DataContentType: "application/json", DataSchema: eventSchemaBase + e.EventType() + "/v" + form.dataVersion + ".json",
		Data: data, TraceParent: tc.Parent, TraceState: tc.State,
	})
}
