// Package outbox is the transactional outbox: the write side commits each
// event it must publish as a row of the outbox table, in the same
// transaction as the state change it describes, and the relay (relay.go)
// publishes those rows to the broker afterwards. The write side never talks
// to the broker, so no commit can happen without its event or an event
// without its commit.
//
// A Message is the same value all the way: the use case builds it, the
// repository inserts it, the relay's claim reads it back and the
// publisher sends it.
package outbox

import (
	"time"

	"github.com/google/uuid"
)

// Message is one event in the outbox. The write side fills in the first
// fields; the claim reads the row back with Attempts and CreatedAt too.
// Payload is the complete CloudEvents document the producer encoded, stored
// and published byte for byte. A field added here (a trace context, say) is
// stored by the insert, read by the claim and passed on by the relay
// untouched; only the Publisher interprets it.
type Message struct {
	// ID is the message id, the CloudEvent's id, by which consumers tell a
	// redelivery from a new event. A UUIDv7: unique without coordination,
	// and time-ordered, so new rows land at the end of the primary key's
	// index.
	ID uuid.UUID
	// AggregateID is the entity the event is about (the payment): the FIFO
	// message group, and the unit whose order ordered mode keeps.
	AggregateID uuid.UUID
	Type        string // the event type, e.g. payment.created
	Payload     []byte
	// TraceParent and TraceState are the W3C trace context of the write
	// that committed the event, empty when it was not traced. The publisher
	// sends them with the message, so that the consumer continues the trace.
	TraceParent, TraceState string

	// Attempts counts the failed publishes so far; the claim reads it.
	Attempts int
	// CreatedAt is when the event committed; the claim reads it, for the
	// latency metric.
	CreatedAt time.Time
}
