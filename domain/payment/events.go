package payment

import "time"

// Event is something that happened to a payment. The repository writes each
// recorded event to the outbox in the transaction that stores the change; its
// wire format is the adapter's business, so events carry values, not JSON.
type Event interface {
	// EventType is the published type name, e.g. "payment.created".
	EventType() string
	// AggregateID is the payment the event belongs to.
	AggregateID() ID
	// OccurredAt is when the change happened.
	OccurredAt() time.Time
}

// Event type names, as published.
const (
	TypeCreated  = "payment.created"
	TypeRefunded = "payment.refunded"
)

// EventTypes returns the type name of every event a payment records. The
// producer's registry must give each a wire form, and the consumer must post
// or deliberately ignore each; tests on both sides iterate this list.
func EventTypes() []string { return []string{TypeCreated, TypeRefunded} }

// Created is recorded when a payment is created.
type Created struct {
	PaymentID  ID
	Amount     Money
	PayerID    string
	MerchantID string
	At         time.Time
}

// EventType implements Event.
func (Created) EventType() string { return TypeCreated }

// AggregateID implements Event.
func (e Created) AggregateID() ID { return e.PaymentID }

// OccurredAt implements Event.
func (e Created) OccurredAt() time.Time { return e.At }

// Refunded is recorded for each refund. It carries the parties and the total
// refunded so far, so that a consumer can post it without having seen the
// payment's Created event first (standard SNS/SQS does not keep order).
type Refunded struct {
	PaymentID     ID
	RefundID      RefundID
	Amount        Money // this refund
	RefundedTotal Money // all refunds so far, this one included
	PayerID       string
	MerchantID    string
	At            time.Time
}

// EventType implements Event.
func (Refunded) EventType() string { return TypeRefunded }

// AggregateID implements Event.
func (e Refunded) AggregateID() ID { return e.PaymentID }

// OccurredAt implements Event.
func (e Refunded) OccurredAt() time.Time { return e.At }
