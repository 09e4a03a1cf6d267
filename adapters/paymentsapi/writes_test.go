package paymentsapi_test

import (
	"bytes"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/paymentsapi"
	"github.com/payments-outbox/payments-outbox/application/payments"
)

// writeExchange is how TestEveryWriteRouteHonoursItsKey drives one POST
// route: the write of the table it serves (payments.Writes), a path to a
// payment it can change, a body, and another body — another request under
// the same key.
type writeExchange struct {
	op          string
	path        func(t *testing.T, srv *httptest.Server) string
	body, other string
	status      int
}

// paymentPath creates a payment with body and returns the path of route
// (a pattern with {id}) for it.
func paymentPath(route, body string) func(t *testing.T, srv *httptest.Server) string {
	return func(t *testing.T, srv *httptest.Server) string {
		t.Helper()
		res := do(t, srv, "POST", "/payments", "application/json", body)
		id, _ := res.json(t)["id"].(string)
		if res.status != 201 || id == "" {
			t.Fatalf("create a payment for %s: %d %s", route, res.status, res.body)
		}
		return strings.Replace(route, "{id}", id, 1)
	}
}

const authorizeBody = `{"amount": 2500, "currency": "BRL", "payer_id": "cus_1", "merchant_id": "mer_1", "capture_method": "manual"}`

// writeExchanges are keyed by the router's "POST pattern", as chi.Walk
// names them.
var writeExchanges = map[string]writeExchange{
	"POST /payments": {op: "create", path: func(*testing.T, *httptest.Server) string { return "/payments" },
		body: createBody, other: strings.Replace(createBody, `"description": "coffee"`, `"description": "tea"`, 1), status: 201},
	"POST /payments/{id}/refunds": {op: "refund", path: paymentPath("/payments/{id}/refunds", createBody),
		body: `{"amount": 100}`, other: `{"amount": 200}`, status: 201},
	"POST /payments/{id}/capture": {op: "capture", path: paymentPath("/payments/{id}/capture", authorizeBody),
		body: `{"amount": 2000}`, other: `{"amount": 1000}`, status: 200},
	"POST /payments/{id}/cancel": {op: "cancel", path: paymentPath("/payments/{id}/cancel", authorizeBody),
		body: `{"cancellation_reason": "duplicate"}`, other: `{"cancellation_reason": "fraudulent"}`, status: 200},
}

// TestEveryWriteRouteHonoursItsKey walks the router's POST routes
// (chi.Walk) and holds them to the application's table of writes: each
// route serves a write of the table, every write is served, and on each
// route a retry with the same Idempotency-Key is answered with the first
// answer, replayed, while another body under that key is refused 422
// idempotency-key-reused — never answered with the first request's result.
// A route added without an exchange here fails, naming it.
func TestEveryWriteRouteHonoursItsKey(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t)
	served := map[string]bool{}
	for _, route := range servedRoutes(t) {
		if !strings.HasPrefix(route, "POST ") {
			continue
		}
		x, ok := writeExchanges[route]
		if !ok {
			t.Errorf("%s is served and has no exchange in writeExchanges: name the write of payments.Writes() it serves and give it two requests", route)
			continue
		}
		served[x.op] = true
		t.Run(route, func(t *testing.T) {
			path := x.path(t, srv)
			key := "Idempotency-Key"
			first := do(t, srv, "POST", path, "application/json", x.body, key, "walk-"+x.op)
			if first.status != x.status {
				t.Fatalf("first request: %d %s, want %d", first.status, first.body, x.status)
			}
			again := do(t, srv, "POST", path, "application/json", x.body, key, "walk-"+x.op)
			if again.status != x.status || again.header.Get(paymentsapi.ReplayedHeader) != "true" || !bytes.Equal(again.body, first.body) {
				t.Errorf("retry: %d replayed=%q\n%s\nwant %d, replayed, and\n%s", again.status, again.header.Get(paymentsapi.ReplayedHeader), again.body, x.status, first.body)
			}
			other := do(t, srv, "POST", path, "application/json", x.other, key, "walk-"+x.op)
			assertProblem(t, other, 422, "/problems/idempotency-key-reused")
		})
	}
	for _, w := range payments.Writes() {
		if !served[w.Op] {
			t.Errorf("the write %q of payments.Writes() is served by no POST route of the router", w.Op)
		}
	}
	for route, x := range writeExchanges {
		if !slices.ContainsFunc(payments.Writes(), func(w payments.Write) bool { return w.Op == x.op }) {
			t.Errorf("%s serves %q, which is not a write of payments.Writes()", route, x.op)
		}
	}
}
