// Package dependency holds the one error every service uses for "a dependency
// is down, retry": a database or a key store that could not be reached, or did
// not answer in time. It is its own package so that every store can wrap it
// and every API can answer it alike, without either importing the other's
// use cases.
package dependency

import "errors"

// ErrUnavailable means a dependency could not be reached in time: nothing was
// done, and the caller may retry (an HTTP client with the same
// Idempotency-Key). Adapters wrap every outage in it — fmt.Errorf("%w: %w",
// dependency.ErrUnavailable, err) — so the HTTP APIs answer 503 with
// Retry-After instead of 500 without knowing which database is behind them.
var ErrUnavailable = errors.New("dependency unavailable")
