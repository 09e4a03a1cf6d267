// Package httpserver is the HTTP plumbing the services' APIs share, so that
// each API (paymentsapi, ledgerapi, webhooksapi) holds only its routes, its
// wire shapes and its own errors, and none depends on another:
//
//   - NewRouter: a service's public chi router, with /openapi.yaml and
//     problem+json answers for unknown routes and methods; NewOpsRouter: the
//     router of its operational listener, /healthz, /readyz and /metrics;
//   - the middleware every request goes through: request id, access log,
//     Prometheus metrics, panic recovery, and Timeout for the API routes;
//     LogRequestIDs, which puts the request's id on every line logged with
//     its context;
//   - RequireBearer and ParseBearer, which read Authorization: Bearer and
//     leave the decision to the service; RequireKey and Principal, the same
//     for the APIs that take the payments API keys; RateLimit, per API key;
//   - DecodeJSON, the strict reading of a JSON body, and ListQuery and
//     ListLimit, a list's query, each refusing with a RequestError;
//   - RFC 9457 problem+json (Problem, WriteProblem) and WriteJSON;
//   - WriteError, the part of the error table every service shares: a
//     dependency that cannot be reached answers 503 with Retry-After, a client
//     that went away 499, a request without valid credentials 401, anything
//     unexpected 500 with nothing of its chain.
package httpserver
