// Package payment is the payments bounded context's domain: the Payment
// aggregate, the Money value object, the events a payment records, and the
// errors its rules return.
//
// It imports only the standard library. State changes are methods that check
// every rule before mutating anything and record an event; the new state
// and the pulled events, encoded by the use case, are committed in one
// transaction (the transactional outbox), so an event exists if and only if
// its change does.
package payment
