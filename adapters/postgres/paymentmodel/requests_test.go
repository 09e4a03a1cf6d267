package paymentmodel_test

import (
	"fmt"
	"time"

	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// request is one call a step makes: a use case's input, or the expiry's
// sweep.
type request interface {
	fmt.Stringer
	// send makes the call on w's service.
	send(w *world) (answer, error)
	// key is the Idempotency-Key the request carries ("" for none) and who
	// sends it.
	key() (key string, who access.Principal)
	// varied is another request of the same use case under the same key.
	varied() request
	// by is the same request sent by who (a create for who's own merchant).
	by(who access.Principal) request
}

// answer is what a call returned: the write's result, or how many
// authorizations a sweep canceled.
type answer struct {
	committed payments.Committed
	swept     int
}

// changeRequest is a request that changes one payment, before its sender
// and key are chosen.
type changeRequest interface {
	request
	with(who access.Principal, key string) request
	paymentID() payment.ID
}

type create struct{ payments.CreatePayment }

func (r create) String() string {
	return fmt.Sprintf("create %d %s %q by %s for %q payer %s key %q", r.Amount, r.Currency, r.CaptureMethod,
		who(r.Principal), r.MerchantID, r.PayerID, r.IdempotencyKey)
}

func (r create) send(w *world) (answer, error) {
	c, err := w.svc.Create(w.ctx, r.CreatePayment)
	return answer{committed: c}, err
}

func (r create) key() (string, access.Principal) { return r.IdempotencyKey, r.Principal }

func (r create) varied() request {
	r.Amount++
	return r
}

func (r create) by(p access.Principal) request {
	r.Principal, r.MerchantID = p, ""
	return r
}

type refund struct{ payments.RefundPayment }

func (r refund) String() string {
	return fmt.Sprintf("refund %d of %s by %s key %q", r.Amount, r.PaymentID, who(r.Principal), r.IdempotencyKey)
}

func (r refund) send(w *world) (answer, error) {
	c, err := w.svc.Refund(w.ctx, r.RefundPayment)
	return answer{committed: c}, err
}

func (r refund) key() (string, access.Principal) { return r.IdempotencyKey, r.Principal }
func (r refund) paymentID() payment.ID           { return r.PaymentID }

func (r refund) varied() request {
	r.Amount++
	return r
}

func (r refund) by(p access.Principal) request { r.Principal = p; return r }

func (r refund) with(p access.Principal, key string) request {
	r.Principal, r.IdempotencyKey = p, key
	return r
}

type capture struct{ payments.CapturePayment }

func (r capture) String() string {
	return fmt.Sprintf("capture %d of %s by %s key %q", r.Amount, r.PaymentID, who(r.Principal), r.IdempotencyKey)
}

func (r capture) send(w *world) (answer, error) {
	c, err := w.svc.Capture(w.ctx, r.CapturePayment)
	return answer{committed: c}, err
}

func (r capture) key() (string, access.Principal) { return r.IdempotencyKey, r.Principal }
func (r capture) paymentID() payment.ID           { return r.PaymentID }

func (r capture) varied() request {
	r.Amount++
	return r
}

func (r capture) by(p access.Principal) request { r.Principal = p; return r }

func (r capture) with(p access.Principal, key string) request {
	r.Principal, r.IdempotencyKey = p, key
	return r
}

type cancel struct{ payments.CancelPayment }

func (r cancel) String() string {
	return fmt.Sprintf("cancel %s for %q by %s key %q", r.PaymentID, r.CancellationReason, who(r.Principal), r.IdempotencyKey)
}

func (r cancel) send(w *world) (answer, error) {
	c, err := w.svc.Cancel(w.ctx, r.CancelPayment)
	return answer{committed: c}, err
}

func (r cancel) key() (string, access.Principal) { return r.IdempotencyKey, r.Principal }
func (r cancel) paymentID() payment.ID           { return r.PaymentID }

func (r cancel) varied() request {
	if r.CancellationReason == "fraudulent" {
		r.CancellationReason = "duplicate"
	} else {
		r.CancellationReason = "fraudulent"
	}
	return r
}

func (r cancel) by(p access.Principal) request { r.Principal = p; return r }

func (r cancel) with(p access.Principal, key string) request {
	r.Principal, r.IdempotencyKey = p, key
	return r
}

// sweep moves the clock on by advance and runs the expiry once.
type sweep struct{ advance time.Duration }

func (r sweep) String() string { return fmt.Sprintf("expiry sweep %s later", r.advance) }

func (r sweep) send(w *world) (answer, error) {
	w.clock = w.clock.Add(r.advance)
	n, err := w.expiry.Sweep(w.ctx)
	return answer{swept: n}, err
}

func (sweep) key() (string, access.Principal) { return "", access.Principal{} }
func (r sweep) varied() request               { return r }
func (r sweep) by(access.Principal) request   { return r }

func who(p access.Principal) string {
	if p.IsPlatform() {
		return "the platform"
	}
	return p.Merchant()
}
