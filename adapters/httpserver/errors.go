package httpserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/payments-outbox/payments-outbox/application/dependency"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
)

// WriteError answers the errors every service answers alike. Each API's
// writeError matches its own errors first and hands it the rest, so the two
// APIs cannot drift apart on these:
//
//   - a *RequestError: the request was refused before the application
//     (DecodeJSON, ListQuery), answered with its problem.
//   - dependency.ErrUnavailable, a dependency (a database, the key store)
//     that could not be reached, or a request that ran out of time: 503 with
//     Retry-After: 1, logged as a warning. Every store wraps its outages in
//     that one sentinel, so no API has to name it.
//   - idempotency.ErrInvalidKey (400), ErrKeyReused (422) and ErrKeyInFlight
//     (409 with Retry-After: 1): every API that takes an Idempotency-Key
//     answers its errors alike (application/idempotency).
//   - context.Canceled: the client went away; 499, which nobody reads but
//     the access log and the metrics.
//   - ErrNoCredentials, ErrMalformedCredentials, ErrInvalidCredentials: 401
//     with a WWW-Authenticate challenge, not logged (the access log has the
//     401; the credential is never written anywhere).
//   - anything else is unexpected: logged once, here, with its whole chain
//     and the request's id, and answered 500 with nothing of that chain.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	log = requestLogger(log) // its lines are found under the request's id
	var (
		p      Problem
		reqErr *RequestError
	)
	switch {
	case errors.As(err, &reqErr):
		p = reqErr.Problem
	case errors.Is(err, ErrNoCredentials):
		w.Header().Set("WWW-Authenticate", "Bearer")
		p = NewProblem(http.StatusUnauthorized, "authentication-required", "this route needs an Authorization header: Bearer and a credential")
	case errors.Is(err, errManyCredentials):
		// 401, not the 400 RFC 6750's invalid_request suggests: to the
		// client it is one more way of sending no usable credential.
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		p = NewProblem(http.StatusUnauthorized, "malformed-credentials", "the request has more than one Authorization header; send one")
	case errors.Is(err, ErrMalformedCredentials):
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		p = NewProblem(http.StatusUnauthorized, "malformed-credentials", "the Authorization header is not Bearer and a credential of this service's form")
	case errors.Is(err, ErrInvalidCredentials):
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		p = NewProblem(http.StatusUnauthorized, "invalid-credentials", "the credential is unknown or revoked")
	case errors.Is(err, idempotency.ErrInvalidKey):
		p = NewProblem(http.StatusBadRequest, "invalid-idempotency-key", err.Error())
	case errors.Is(err, idempotency.ErrKeyReused):
		p = NewProblem(http.StatusUnprocessableEntity, "idempotency-key-reused", "this Idempotency-Key was used with a different request")
	case errors.Is(err, idempotency.ErrKeyInFlight):
		// The first request holds the key for as long as its transaction:
		// a second is plenty, and the retry then gets its answer.
		w.Header().Set("Retry-After", "1")
		p = NewProblem(http.StatusConflict, "idempotency-key-in-flight", "a request with this Idempotency-Key is still being processed; retry shortly")
	case errors.Is(err, dependency.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		log.WarnContext(r.Context(), "request failed: unavailable", "err", err)
		w.Header().Set("Retry-After", "1")
		p = NewProblem(http.StatusServiceUnavailable, "unavailable", "the service is temporarily unavailable; retry shortly")
	case errors.Is(err, context.Canceled):
		p = NewProblem(499, "client-closed-request", "")
		p.Title = "Client Closed Request"
	default:
		log.ErrorContext(r.Context(), "request failed", "err", err)
		p = NewProblem(http.StatusInternalServerError, "internal", "")
	}
	WriteProblem(w, p)
}
