package paymentsapi

import (
	"errors"
	"net/http"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// writeError is the only place that turns an error into a response. Errors
// the client can act on get their status and a detail; the rest — an
// unreachable database, a client gone, anything unexpected — are answered by
// httpserver.WriteError, the table every service shares.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var (
		invalid *payment.ValidationError
		p       httpserver.Problem
	)
	switch {
	case errors.As(err, &invalid):
		p = httpserver.NewProblem(http.StatusUnprocessableEntity, "validation-failed", "the request has invalid fields")
		for _, fp := range invalid.Problems {
			p.Errors = append(p.Errors, httpserver.FieldError{Field: fp.Field, Detail: fp.Detail})
		}
	case errors.Is(err, payment.ErrNotFound):
		p = httpserver.NewProblem(http.StatusNotFound, "payment-not-found", "no payment has this id")
	case errors.Is(err, payment.ErrRefundExceedsAmount):
		p = httpserver.NewProblem(http.StatusConflict, "refund-exceeds-amount", err.Error())
	case errors.Is(err, payment.ErrCaptureExceedsAmount):
		p = httpserver.NewProblem(http.StatusConflict, "capture-exceeds-amount", err.Error())
	case errors.Is(err, payment.ErrInvalidTransition):
		p = httpserver.NewProblem(http.StatusConflict, "invalid-transition", err.Error())
	case errors.Is(err, payment.ErrAuthorizationExpired):
		p = httpserver.NewProblem(http.StatusConflict, "authorization-expired", err.Error())
	case errors.Is(err, payment.ErrInvalidAmount), errors.Is(err, payment.ErrCurrencyMismatch):
		p = httpserver.NewProblem(http.StatusUnprocessableEntity, "invalid-amount", err.Error())
	case errors.Is(err, payments.ErrAmountLimit):
		p = httpserver.NewProblem(http.StatusUnprocessableEntity, "amount-exceeds-limit", err.Error())
	case errors.Is(err, payments.ErrInvalidListQuery):
		p = httpserver.NewProblem(http.StatusBadRequest, "invalid-query-parameter", err.Error())
	case errors.Is(err, payments.ErrUnknownCursor):
		p = httpserver.NewProblem(http.StatusBadRequest, "unknown-cursor",
			"starting_after or ending_before names no payment of this list")
	default:
		// A request refused before the application (httpserver.RequestError),
		// an outage (503), a client gone, or a fault — among them
		// access.ErrUnauthenticated, a use case reached without a principal,
		// which is a bug: 500, logged.
		httpserver.WriteError(w, r, a.log, err)
		return
	}
	httpserver.WriteProblem(w, p)
}
