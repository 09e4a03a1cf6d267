package payment

import "time"

// Event is something that happened to a payment. Each recorded event reaches
// the outbox in the transaction that stores the change; its wire form is the
// application's business (application/payments/events.go), so events carry
// values, not JSON.
//
// Each event is declared beside the method that records it (Created by New,
// Refunded by Refund, in payment.go), with the type name it is published
// under, so that a new event is one change in one place. There is no list of
// event types to keep up to date as well: the producer's tests read this
// package's source and find every type with an EventType method.
type Event interface {
	// EventType is the published type name, e.g. "payment.created".
	EventType() string
	// AggregateID is the payment the event belongs to.
	AggregateID() ID
	// OccurredAt is when the change happened.
	OccurredAt() time.Time
}
