package paymentsapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/paymentsapi"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/access/accesstest"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// The bad input that TestBadRequests does not already send, over real HTTP to
// a real Postgres: every request is answered 4xx with the problem+json the
// OpenAPI document (api/payments.openapi.yaml) gives its route, never 5xx,
// and none of them leaves a row behind.

// rowCounts is what a request could have half-written.
func rowCounts(t *testing.T, pool *pgxpool.Pool) [4]int {
	t.Helper()
	var n [4]int
	err := pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM payments), (SELECT count(*) FROM refunds),
		(SELECT count(*) FROM outbox), (SELECT count(*) FROM idempotency_keys)`).Scan(&n[0], &n[1], &n[2], &n[3])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestBadInputNeverWritesOrFails(t *testing.T) {
	t.Parallel()
	srv, pool := newServer(t)
	id := create(t, srv).json(t)["id"].(string)
	before := rowCounts(t, pool)

	payment := func(amount, currency string) string {
		return `{"amount": ` + amount + `, "currency": ` + currency + `, "payer_id": "a", "merchant_id": "b"}`
	}
	valid := payment("1", `"BRL"`)
	mib := `{"amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b", "description": "` + strings.Repeat("é", 1<<19) + `"}`
	nul := func(field string) string {
		return strings.Replace(`{"amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b", "description": "d"}`, `"`+field+`": "`, `"`+field+`": "x\u0000`, 1)
	}
	refunds := "/payments/" + id + "/refunds"

	tests := []struct {
		name, method, path, ct, body string
		header                       []string
		status                       int
		typ                          string
	}{
		// Methods and routes.
		{name: "PUT payments", method: "PUT", path: "/payments", ct: "application/json", body: valid, status: 405, typ: "/problems/method-not-allowed"},
		{name: "GET payments with an offset", method: "GET", path: "/payments?merchant_id=mer_1&offset=10", status: 400, typ: "/problems/invalid-query-parameter"},
		{name: "PATCH payment", method: "PATCH", path: "/payments/" + id, ct: "application/json", body: `{"amount": 1}`, status: 405, typ: "/problems/method-not-allowed"},
		{name: "GET refunds", method: "GET", path: refunds, status: 405, typ: "/problems/method-not-allowed"},
		{name: "DELETE refunds", method: "DELETE", path: refunds, status: 405, typ: "/problems/method-not-allowed"},
		{name: "POST openapi", method: "POST", path: "/openapi.yaml", status: 405, typ: "/problems/method-not-allowed"},
		{name: "no ops route here", method: "GET", path: "/metrics", status: 404, typ: "/problems/not-found"},

		// Content types.
		{name: "xml", method: "POST", path: "/payments", ct: "application/xml", body: valid, status: 415, typ: "/problems/unsupported-media-type"},
		{name: "form", method: "POST", path: "/payments", ct: "application/x-www-form-urlencoded", body: "amount=1&currency=BRL", status: 415, typ: "/problems/unsupported-media-type"},
		{name: "multipart", method: "POST", path: "/payments", ct: "multipart/form-data; boundary=x", body: valid, status: 415, typ: "/problems/unsupported-media-type"},
		{name: "json suffix type", method: "POST", path: "/payments", ct: "application/merge-patch+json", body: valid, status: 415, typ: "/problems/unsupported-media-type"},
		{name: "unparseable media type", method: "POST", path: "/payments", ct: "application/json; charset", body: valid, status: 415, typ: "/problems/unsupported-media-type"},
		{name: "refund as text", method: "POST", path: refunds, ct: "text/plain", body: `{"amount": 1}`, status: 415, typ: "/problems/unsupported-media-type"},

		// Amounts.
		{name: "exponent amount", method: "POST", path: "/payments", ct: "application/json", body: payment("1e3", `"BRL"`), status: 422, typ: "/problems/validation-failed"},
		{name: "integral float amount", method: "POST", path: "/payments", ct: "application/json", body: payment("1.0", `"BRL"`), status: 422, typ: "/problems/validation-failed"},
		{name: "negative zero amount", method: "POST", path: "/payments", ct: "application/json", body: payment("-0", `"BRL"`), status: 422, typ: "/problems/validation-failed"},
		{name: "below int64 amount", method: "POST", path: "/payments", ct: "application/json", body: payment("-9223372036854775809", `"BRL"`), status: 422, typ: "/problems/validation-failed"},
		{name: "min int64 amount", method: "POST", path: "/payments", ct: "application/json", body: payment("-9223372036854775808", `"BRL"`), status: 422, typ: "/problems/validation-failed"},
		{name: "huge amount", method: "POST", path: "/payments", ct: "application/json", body: payment(strings.Repeat("9", 400), `"BRL"`), status: 422, typ: "/problems/validation-failed"},
		{name: "boolean amount", method: "POST", path: "/payments", ct: "application/json", body: payment("true", `"BRL"`), status: 422, typ: "/problems/validation-failed"},
		{name: "refund negative", method: "POST", path: refunds, ct: "application/json", body: `{"amount": -1}`, status: 422, typ: "/problems/validation-failed"},
		{name: "refund fractional", method: "POST", path: refunds, ct: "application/json", body: `{"amount": 0.5}`, status: 422, typ: "/problems/validation-failed"},
		{name: "refund overflowing", method: "POST", path: refunds, ct: "application/json", body: `{"amount": 9223372036854775808}`, status: 422, typ: "/problems/validation-failed"},
		{name: "refund max int64", method: "POST", path: refunds, ct: "application/json", body: `{"amount": 9223372036854775807}`, status: 409, typ: "/problems/refund-exceeds-amount"},

		// Currencies.
		{name: "lower-case unknown currency", method: "POST", path: "/payments", ct: "application/json", body: payment("1", `"xyz"`), status: 422, typ: "/problems/validation-failed"},
		{name: "numeric currency code", method: "POST", path: "/payments", ct: "application/json", body: payment("1", `"986"`), status: 422, typ: "/problems/validation-failed"},
		{name: "currency symbol", method: "POST", path: "/payments", ct: "application/json", body: payment("1", `"€"`), status: 422, typ: "/problems/validation-failed"},
		{name: "padded currency", method: "POST", path: "/payments", ct: "application/json", body: payment("1", `" BRL"`), status: 422, typ: "/problems/validation-failed"},
		{name: "empty currency", method: "POST", path: "/payments", ct: "application/json", body: payment("1", `""`), status: 422, typ: "/problems/validation-failed"},
		{name: "SQL in currency", method: "POST", path: "/payments", ct: "application/json", body: payment("1", `"BRL'; --"`), status: 422, typ: "/problems/validation-failed"},

		// Ids.
		{name: "uuid in braces", method: "GET", path: "/payments/%7B" + id + "%7D", status: 404, typ: "/problems/payment-not-found"},
		{name: "urn uuid", method: "GET", path: "/payments/urn:uuid:" + id, status: 404, typ: "/problems/payment-not-found"},
		{name: "uuid without dashes", method: "GET", path: "/payments/" + strings.ReplaceAll(id, "-", ""), status: 404, typ: "/problems/payment-not-found"},
		{name: "uuid with a non-hex digit", method: "GET", path: "/payments/" + id[:35] + "g", status: 404, typ: "/problems/payment-not-found"},
		{name: "uuid with NUL", method: "GET", path: "/payments/" + id[:35] + "%00", status: 404, typ: "/problems/payment-not-found"},
		{name: "unicode id", method: "GET", path: "/payments/%E2%98%83", status: 404, typ: "/problems/payment-not-found"},
		{name: "refund SQL id", method: "POST", path: "/payments/1'%3B%20DROP%20TABLE%20payments%3B--/refunds", ct: "application/json", body: `{"amount": 1}`, status: 404, typ: "/problems/payment-not-found"},

		// Text Postgres cannot store: NUL is valid JSON (\u0000) but not valid in a text column.
		{name: "NUL in description", method: "POST", path: "/payments", ct: "application/json", body: nul("description"), status: 422, typ: "/problems/validation-failed"},
		{name: "NUL in payer", method: "POST", path: "/payments", ct: "application/json", body: nul("payer_id"), status: 422, typ: "/problems/validation-failed"},
		{name: "NUL in merchant", method: "POST", path: "/payments", ct: "application/json", body: nul("merchant_id"), status: 422, typ: "/problems/validation-failed"},
		// Party ids become ledger account ids: what the ledger would refuse
		// (ledger.PayerAccount) must be refused here, not dead-lettered there.
		{name: "tab in payer", method: "POST", path: "/payments", ct: "application/json", body: `{"amount": 1, "currency": "BRL", "payer_id": "a\tb", "merchant_id": "b"}`, status: 422, typ: "/problems/validation-failed"},
		{name: "DEL in merchant", method: "POST", path: "/payments", ct: "application/json", body: `{"amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b\u007f"}`, status: 422, typ: "/problems/validation-failed"},
		{name: "payer over 255 bytes", method: "POST", path: "/payments", ct: "application/json", body: `{"amount": 1, "currency": "BRL", "payer_id": "` + strings.Repeat("é", 128) + `", "merchant_id": "b"}`, status: 422, typ: "/problems/validation-failed"},
		{name: "SQL in idempotency key", method: "POST", path: "/payments", ct: "application/json", body: payment("0", `"BRL"`), header: []string{"Idempotency-Key", "k');DELETE/**/FROM/**/idempotency_keys;--"}, status: 422, typ: "/problems/validation-failed"},
		{name: "unicode idempotency key", method: "POST", path: "/payments", ct: "application/json", body: valid, header: []string{"Idempotency-Key", "clé"}, status: 400, typ: "/problems/invalid-idempotency-key"},

		// 1 MiB bodies.
		{name: "1 MiB create", method: "POST", path: "/payments", ct: "application/json", body: mib, status: 413, typ: "/problems/body-too-large"},
		{name: "1 MiB refund", method: "POST", path: refunds, ct: "application/json", body: `{"amount": 1` + strings.Repeat(" ", 1<<20) + `}`, status: 413, typ: "/problems/body-too-large"},
		{name: "1 MiB of nesting", method: "POST", path: "/payments", ct: "application/json", body: strings.Repeat("[", 1<<20), status: 400, typ: "/problems/malformed-body"},
		{name: "1 MiB wrong type", method: "POST", path: "/payments", ct: "text/plain", body: mib, status: 415, typ: "/problems/unsupported-media-type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, srv, tt.method, tt.path, tt.ct, tt.body, tt.header...)
			assertProblem(t, res, tt.status, tt.typ)
			if allow := res.header.Get("Allow"); tt.status == 405 && (allow == "" || strings.Contains(allow, tt.method)) {
				t.Errorf("Allow: got %q, want the methods %s takes, not %s", allow, tt.path, tt.method)
			}
		})
	}

	if after := rowCounts(t, pool); after != before {
		t.Errorf("rows (payments, refunds, outbox, keys) = %v after the bad requests, want %v as before", after, before)
	}
	if got := do(t, srv, "GET", "/payments/"+id, "", "").json(t); got["refunded_amount"] != 0.0 || got["status"] != "created" {
		t.Errorf("payment after bad refunds: %v", got)
	}
}

func TestUnicodeAndSQLRoundTrip(t *testing.T) {
	t.Parallel()
	srv, pool := newServer(t)
	texts := []string{
		`'; DELETE FROM outbox; --`,
		`" OR ""="`,
		`\x00\\N%_*?$1`,
		"emoji 💸🧾 and a ZWJ family 👩‍👩‍👧",
		"right-to-left: مدفوعات \u202e gnp.exe",
		"combining: e\u0301 vs é, and U+2028\u2028here",
		"\u00a0non-breaking\ttab\nnewline\r",
		"surrogate-free BMP end \uffff",
	}
	for _, text := range texts {
		party := strings.Map(func(r rune) rune { // ids refuse control characters; descriptions keep them
			if r < 0x20 {
				return -1
			}
			return r
		}, text)
		body, _ := json.Marshal(map[string]any{"amount": 7, "currency": "usd", "payer_id": party, "merchant_id": party, "description": text})
		res := do(t, srv, "POST", "/payments", "application/json", string(body))
		if res.status != 201 {
			t.Fatalf("%q: status %d %s", text, res.status, res.body)
		}
		got := do(t, srv, "GET", res.header.Get("Location"), "", "").json(t)
		for f, want := range map[string]string{"payer_id": party, "merchant_id": party, "description": text} {
			if got[f] != want {
				t.Errorf("%s = %q, want %q verbatim", f, got[f], want)
			}
		}
		var payload string
		if err := pool.QueryRow(context.Background(), `SELECT payload->'data'->>'payer_id' FROM outbox WHERE aggregate_id = $1`, got["id"]).Scan(&payload); err != nil {
			t.Fatal(err)
		}
		if payload != party {
			t.Errorf("outbox payer_id = %q, want %q verbatim", payload, party)
		}
	}
}

// TestSlowClientIsDisconnected holds a connection open while trickling a
// request's headers a byte at a time, never finishing them (slowloris): the
// server's ReadHeaderTimeout must close it, and others must still be served.
func TestSlowClientIsDisconnected(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	svc := payments.NewService(paymentstore.New(pool), time.Now,
		func() string { return uuid.Must(uuid.NewV7()).String() }, payments.Config{})
	srv := httptest.NewUnstartedServer(validated(t, paymentsapi.NewHandler(svc, access.NewAuthenticator(accesstest.NewFakeStore(), time.Now, access.AuthenticatorConfig{}), logtest.Discard(), nil, paymentsapi.Config{})))
	srv.Config.ReadHeaderTimeout = 300 * time.Millisecond // cmd/payments sets 5s
	srv.Start()
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A failsafe, far beyond the timeout under test: the read below returns
	// as soon as the server closes the connection.
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		head := "POST /payments HTTP/1.1\r\nHost: payments\r\nContent-Type: application/json\r\nX-Slow: "
		if _, err := io.WriteString(conn, head); err != nil {
			return
		}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte("a")); err != nil {
					return // the server hung up, as it should
				}
			}
		}
	}()
	reply, err := io.ReadAll(bufio.NewReader(conn))
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		t.Fatalf("the server kept a never-finished header open for 30s (ReadHeaderTimeout not applied)")
	}
	// Closed, with at most a 4xx (net/http may answer 408 before closing); never a 2xx or 5xx.
	if len(reply) > 0 {
		line, _, _ := strings.Cut(string(reply), "\r\n")
		if !strings.HasPrefix(line, "HTTP/1.1 4") {
			t.Errorf("slow client got %q, want the connection closed", line)
		}
	}
	if n := rowCounts(t, pool); n != [4]int{} {
		t.Errorf("rows after the slow client = %v, want none", n)
	}
	res, err := srv.Client().Get(srv.URL + "/openapi.yaml")
	if err != nil {
		t.Fatalf("after the slow client: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET /openapi.yaml after the slow client: %d", res.StatusCode)
	}
}

// TestSmuggledPaymentIsNeverCreated: a POST whose Content-Length covers a
// second request that its chunked framing leaves out — what a proxy that
// reads Content-Length forwards as one request, and this server would read
// as two — is refused 400 on a real listener, its connection closed, and the
// hidden payment never created.
func TestSmuggledPaymentIsNeverCreated(t *testing.T) {
	t.Parallel()
	srv, pool, keys := newServerWithKeys(t, logtest.Discard())
	body := `{"amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`
	hidden := fmt.Sprintf("POST /payments HTTP/1.1\r\nHost: payments\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		keys.platform, len(body), body)
	smuggled := "0\r\n\r\n" + hidden
	raw := fmt.Sprintf("POST /payments HTTP/1.1\r\nHost: payments\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%s",
		keys.platform, len(smuggled), smuggled)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil { // a failsafe: the server closes at once
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assertProblem(t, response{res.StatusCode, res.Header, first}, http.StatusBadRequest, "/problems/transfer-encoding-refused")
	if !res.Close {
		t.Error("the connection was not closed after the refusal")
	}
	rest, err := io.ReadAll(br)
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		t.Fatal("the connection was left open")
	}
	if len(rest) > 0 {
		t.Errorf("the hidden request was served: %q", rest)
	}
	if n := rowCounts(t, pool); n != [4]int{} {
		t.Errorf("rows after the smuggling attempt = %v, want none", n)
	}
}
