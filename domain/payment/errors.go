package payment

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors callers match with errors.Is. Each is returned wrapped with
// the offending values.
var (
	// ErrNotFound means no payment has the given id.
	ErrNotFound = errors.New("payment not found")
	// ErrInvalidAmount means an amount is not a positive whole number of minor
	// units, or arithmetic on it would overflow.
	ErrInvalidAmount = errors.New("invalid amount")
	// ErrCurrencyMismatch means two amounts of different currencies met.
	ErrCurrencyMismatch = errors.New("currency mismatch")
	// ErrRefundExceedsAmount means a refund would take the refunded total past
	// the payment's amount.
	ErrRefundExceedsAmount = errors.New("refund exceeds the refundable amount")
	// ErrCaptureExceedsAmount means a capture asks for more than the payment
	// authorized.
	ErrCaptureExceedsAmount = errors.New("capture exceeds the authorized amount")
	// ErrInvalidTransition means the payment's status does not allow the
	// change: a capture or a cancel of a payment that is not authorized, a
	// refund of one that moved no money.
	ErrInvalidTransition = errors.New("the payment's status does not allow this change")
	// ErrAuthorizationExpired means a capture came at or after the payment's
	// capture_before: the authorization is no longer held.
	ErrAuthorizationExpired = errors.New("the authorization has expired")
	// ErrInvalid means a payment's attributes break a rule; the error is a
	// *ValidationError listing each field.
	ErrInvalid = errors.New("invalid payment")
)

// FieldProblem names one invalid field and why it is invalid.
type FieldProblem struct {
	Field  string
	Detail string
}

// ValidationError lists every invalid field of a request at once, so a client
// can fix them all in one round trip. It matches ErrInvalid with errors.Is.
type ValidationError struct {
	Problems []FieldProblem
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Field + ": " + p.Detail
	}
	return fmt.Sprintf("%s: %s", ErrInvalid, strings.Join(parts, "; "))
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

func (e *ValidationError) add(field, format string, args ...any) {
	e.Problems = append(e.Problems, FieldProblem{Field: field, Detail: fmt.Sprintf(format, args...)})
}

func (e *ValidationError) orNil() error {
	if len(e.Problems) == 0 {
		return nil
	}
	return e
}
