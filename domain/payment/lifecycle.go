package payment

import "fmt"

// Operation is a change a payment may undergo: what a use case asks of the
// domain through one of its methods (New, Authorize, Capture, Cancel,
// Refund). Refunds are two operations because they lead to two statuses.
type Operation string

// The operations, each named for the method that makes it.
const (
	// OpCreate is New: a payment with capture method automatic.
	OpCreate Operation = "create"
	// OpAuthorize is Authorize: a payment with capture method manual.
	OpAuthorize Operation = "authorize"
	// OpCapture is Capture, of the whole authorization or of part of it.
	OpCapture Operation = "capture"
	// OpCancel is Cancel for a reason a client gives.
	OpCancel Operation = "cancel"
	// OpExpire is Cancel with CancelExpired, at or after capture_before:
	// the service's own cancel of an authorization nobody captured.
	OpExpire Operation = "expire"
	// OpRefundPartial is Refund of less than is left to refund.
	OpRefundPartial Operation = "refund_partial"
	// OpRefundFull is Refund of all that is left to refund.
	OpRefundFull Operation = "refund_full"
)

// StatusNone is the zero Status: the status of a payment that does not
// exist yet, where the creations start from. No payment is ever in it.
const StatusNone = Status("")

// Transition is one row of the payment's state machine: a payment in
// status From may undergo Op, which takes it to status To and records one
// event, of type Event.
type Transition struct {
	From  Status
	Op    Operation
	To    Status
	Event string
}

// transitions is the state machine. Every method that changes a payment
// looks its operation up here (Step) before it changes anything, and takes
// the new status from the row it found: a change of a status not listed for
// it is refused, so a new transition is a row here (and the method that
// makes it), not a condition in a method. Whatever the status allows, the
// amounts bound each change too (0 ≤ refunded ≤ captured ≤ amount), which
// the methods check after the status.
//
//	automatic: created ──────────────┐
//	manual:    authorized ─► captured ┴─► partially_refunded ─► refunded
//	               └───────► canceled (cancel or expire)
//
// The model-based test of adapters/postgres/paymentmodel runs every row
// against the real stores, and the ledger after them.
var transitions = []Transition{
	{StatusNone, OpCreate, StatusCreated, TypeCreated},
	{StatusNone, OpAuthorize, StatusAuthorized, TypeAuthorized},

	{StatusAuthorized, OpCapture, StatusCaptured, TypeCaptured},
	{StatusAuthorized, OpCancel, StatusCanceled, TypeCanceled},
	{StatusAuthorized, OpExpire, StatusCanceled, TypeCanceled},

	{StatusCreated, OpRefundPartial, StatusPartiallyRefunded, TypeRefunded},
	{StatusCreated, OpRefundFull, StatusRefunded, TypeRefunded},
	{StatusCaptured, OpRefundPartial, StatusPartiallyRefunded, TypeRefunded},
	{StatusCaptured, OpRefundFull, StatusRefunded, TypeRefunded},
	{StatusPartiallyRefunded, OpRefundPartial, StatusPartiallyRefunded, TypeRefunded},
	{StatusPartiallyRefunded, OpRefundFull, StatusRefunded, TypeRefunded},
}

// refusals are the operations a status refuses with another error than
// ErrInvalidTransition: a refund of a refunded payment is refused because
// nothing is left to refund, as a refund larger than what is left is.
var refusals = map[Transition]error{
	{From: StatusRefunded, Op: OpRefundPartial}: ErrRefundExceedsAmount,
	{From: StatusRefunded, Op: OpRefundFull}:    ErrRefundExceedsAmount,
}

// Transitions returns the state machine's rows, in the order they are
// declared.
func Transitions() []Transition { return append([]Transition(nil), transitions...) }

// Statuses returns every status a payment can be in, in the order the
// state machine first reaches them.
func Statuses() []Status {
	var out []Status
	seen := map[Status]bool{StatusNone: true}
	for _, t := range transitions {
		if !seen[t.To] {
			seen[t.To] = true
			out = append(out, t.To)
		}
	}
	return out
}

// Operations returns every operation of the state machine, in the order it
// first allows them.
func Operations() []Operation {
	var out []Operation
	seen := map[Operation]bool{}
	for _, t := range transitions {
		if !seen[t.Op] {
			seen[t.Op] = true
			out = append(out, t.Op)
		}
	}
	return out
}

// Step returns the transition op makes from status from or, when from
// does not allow op, the error it is refused with: ErrInvalidTransition,
// or ErrRefundExceedsAmount for a refund of a payment with nothing left to
// refund.
func Step(from Status, op Operation) (Transition, error) {
	for _, t := range transitions {
		if t.From == from && t.Op == op {
			return t, nil
		}
	}
	if err, ok := refusals[Transition{From: from, Op: op}]; ok {
		return Transition{}, err
	}
	return Transition{}, ErrInvalidTransition
}

// step is Step for p's status, its refusal worded for a client: what was
// asked, and of a payment in which status.
func (p *Payment) step(op Operation, what string) (Transition, error) {
	t, err := Step(p.status, op)
	if err != nil {
		if p.status == StatusNone {
			return Transition{}, fmt.Errorf("%w: %s", err, what)
		}
		return Transition{}, fmt.Errorf("%w: %s of a payment %s", err, what, p.status)
	}
	return t, nil
}
