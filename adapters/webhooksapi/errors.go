package webhooksapi

import (
	"errors"
	"net/http"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// writeError is the only place that turns an error into a response. The use
// cases' errors get their status and a detail; the rest — a request refused
// before the application, the payments service or the database unreachable,
// a client gone, anything unexpected — are answered by httpserver.WriteError,
// the table every service shares.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var p httpserver.Problem
	switch {
	case errors.Is(err, webhooks.ErrInvalidEndpoint):
		p = httpserver.NewProblem(http.StatusUnprocessableEntity, "invalid-endpoint", err.Error())
	case errors.Is(err, webhooks.ErrEndpointNotFound):
		// Another merchant's too: existence is not revealed.
		p = httpserver.NewProblem(http.StatusNotFound, "endpoint-not-found", "no webhook endpoint has this id")
	case errors.Is(err, webhooks.ErrEventNotFound):
		p = httpserver.NewProblem(http.StatusNotFound, "event-not-found", "this endpoint was never sent an event with this id")
	case errors.Is(err, webhooks.ErrEndpointDeleted):
		p = httpserver.NewProblem(http.StatusConflict, "endpoint-deleted", "the webhook endpoint is deleted: it takes no action")
	case errors.Is(err, webhooks.ErrEndpointDisabled):
		p = httpserver.NewProblem(http.StatusConflict, "endpoint-disabled", "the webhook endpoint is disabled (see its disabled_reason): it is sent nothing, redeliveries included")
	case errors.Is(err, webhooks.ErrInvalidListQuery):
		p = httpserver.NewProblem(http.StatusBadRequest, "invalid-query-parameter", err.Error())
	case errors.Is(err, webhooks.ErrTooManyEndpoints):
		p = httpserver.NewProblem(http.StatusConflict, "endpoint-limit-reached",
			"the merchant has as many webhook endpoints as it may; delete one it no longer uses first")
	case errors.Is(err, webhooks.ErrInvalidRecover):
		p = httpserver.NewProblem(http.StatusUnprocessableEntity, "invalid-recovery", err.Error())
	case errors.Is(err, access.ErrRateLimited):
		// The payments service refused to verify the key: its
		// verifications are over their limit too.
		w.Header().Set("Retry-After", "1")
		p = httpserver.NewProblem(http.StatusTooManyRequests, "rate-limited", "this API key made more requests than its limit allows; retry after Retry-After seconds")
	case errors.Is(err, webhooks.ErrUnknownCursor):
		p = httpserver.NewProblem(http.StatusBadRequest, "unknown-cursor",
			"starting_after or ending_before names nothing of this list")
	default:
		// access.ErrUnauthenticated among them: a use case reached without
		// a principal is a bug, answered 500 and logged.
		httpserver.WriteError(w, r, a.log, err)
		return
	}
	httpserver.WriteProblem(w, p)
}
