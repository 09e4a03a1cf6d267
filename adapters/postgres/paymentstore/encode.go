package paymentstore

import "github.com/payments-outbox/payments-outbox/domain/payment"

// EncodeEvent renders e as the CloudEvents document the repository stores in
// the outbox and the relay publishes under message id. It is exported for the
// tools (tools/loadgen, tools/faultsuite), which write outbox rows or send
// events without going through the service: built with the producer's own
// encoder, their messages change when the published format does, instead of
// drifting from it unnoticed. It fails for an event with no wire format.
func EncodeEvent(id string, e payment.Event) ([]byte, error) {
	return encodeEvent(id, e, traceContext{})
}
