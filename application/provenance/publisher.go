package provenance

import (
	"context"

	"github.com/payments-outbox/payments-outbox/application/outbox"
)

// Broker is the broker as the signing Publisher needs it: one that sends
// each message with its signature beside it (adapters/sns sends them as
// message attributes). Its answer is outbox.Publisher's: one error per
// message, in order, nil only for a message the broker acknowledged.
type Broker interface {
	PublishSigned(ctx context.Context, msgs []outbox.Message, sigs []Signature) []error
}

// Publisher is an outbox.Publisher that signs each message's payload — the
// exact bytes the broker publishes — and hands the broker both. The relay
// publishes through it as through any Publisher and knows nothing of
// signatures; cmd/payments wraps the broker in it.
type Publisher struct {
	broker Broker
	signer *Signer
}

var _ outbox.Publisher = (*Publisher)(nil)

// NewPublisher returns a Publisher that signs with signer and publishes to
// broker.
func NewPublisher(broker Broker, signer *Signer) *Publisher {
	return &Publisher{broker: broker, signer: signer}
}

// Publish implements outbox.Publisher.
func (p *Publisher) Publish(ctx context.Context, msgs []outbox.Message) []error {
	sigs := make([]Signature, len(msgs))
	for i, m := range msgs {
		sigs[i] = p.signer.Sign(m.Payload)
	}
	return p.broker.PublishSigned(ctx, msgs, sigs)
}
