package httpserver

import (
	"fmt"
	"net/http"
)

// IdempotencyHeader carries a client's idempotency key, on the routes that
// take one.
const IdempotencyHeader = "Idempotency-Key"

// IdempotencyKey is the request's Idempotency-Key, "" when it has none. A
// request with the header twice is refused (400
// /problems/invalid-idempotency-key): which of the two a server, or a proxy
// before it, reads is anyone's guess, so neither is — as a second
// Authorization header is refused. The key's own form is the use case's to
// check.
func IdempotencyKey(r *http.Request) (string, error) {
	vs := r.Header.Values(IdempotencyHeader)
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		return vs[0], nil
	}
	return "", &RequestError{NewProblem(http.StatusBadRequest, "invalid-idempotency-key",
		fmt.Sprintf("the request has %d Idempotency-Key headers; send one", len(vs)))}
}
