package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/payments-outbox/payments-outbox/adapters/httpapi/problem"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// writeError is the only place that turns an error into a response. Errors
// the client can act on get their status and a detail; anything else is
// logged once, here, with its whole chain, and answered 500 with nothing of
// that chain.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var (
		reqErr  *requestError
		invalid *payment.ValidationError
		p       problem.Details
	)
	switch {
	case errors.As(err, &reqErr):
		p = problem.New(reqErr.status, reqErr.slug, reqErr.detail)
	case errors.As(err, &invalid):
		p = problem.New(http.StatusUnprocessableEntity, "validation-failed", "the request has invalid fields")
		for _, fp := range invalid.Problems {
			p.Errors = append(p.Errors, problem.FieldError{Field: fp.Field, Detail: fp.Detail})
		}
	case errors.Is(err, payment.ErrNotFound):
		p = problem.New(http.StatusNotFound, "payment-not-found", "no payment has this id")
	case errors.Is(err, payment.ErrRefundExceedsAmount):
		p = problem.New(http.StatusConflict, "refund-exceeds-amount", err.Error())
	case errors.Is(err, payment.ErrInvalidAmount), errors.Is(err, payment.ErrCurrencyMismatch):
		p = problem.New(http.StatusUnprocessableEntity, "invalid-amount", err.Error())
	case errors.Is(err, payments.ErrInvalidKey):
		p = problem.New(http.StatusBadRequest, "invalid-idempotency-key", err.Error())
	case errors.Is(err, payments.ErrKeyReused):
		p = problem.New(http.StatusUnprocessableEntity, "idempotency-key-reused",
			"this Idempotency-Key was used with a different request")
	case errors.Is(err, payments.ErrKeyInFlight):
		w.Header().Set("Retry-After", "1")
		p = problem.New(http.StatusConflict, "idempotency-key-in-flight",
			"a request with this Idempotency-Key is still being processed; retry shortly")
	case errors.Is(err, payments.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		a.log.WarnContext(r.Context(), "request failed: unavailable", "err", err)
		w.Header().Set("Retry-After", "1")
		p = problem.New(http.StatusServiceUnavailable, "unavailable", "the service is temporarily unavailable; retry shortly")
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer.
		p = problem.New(499, "client-closed-request", "")
		p.Title = "Client Closed Request"
	default:
		a.log.ErrorContext(r.Context(), "request failed", "err", err)
		p = problem.New(http.StatusInternalServerError, "internal", "")
	}
	problem.Write(w, p)
}
