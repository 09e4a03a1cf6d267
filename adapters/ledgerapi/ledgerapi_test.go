package ledgerapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"

	"github.com/payments-outbox/payments-outbox/adapters/ledgerapi"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/dependency"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

const paymentID = "7d4f8f7c-1d2b-4a53-b8d4-1d5b4cf1b7a2"

// fakeQueries answers from fixed data, or fails with err when set.
type fakeQueries struct{ err error }

// asOfPast is the as_of at which the fake's merchant mer_1 had less.
var asOfPast = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func (f fakeQueries) BalancesAsOf(_ context.Context, account string, at time.Time) ([]ledger.Balance, error) {
	if f.err != nil {
		return nil, f.err
	}
	id, err := ledger.ParseAccountID(account)
	if err != nil {
		return nil, err
	}
	switch account {
	case "merchant:mer_1":
		if at.Equal(asOfPast) {
			return []ledger.Balance{ledger.RehydrateBalance(id, "BRL", 100, 0)}, nil
		}
		return []ledger.Balance{ledger.RehydrateBalance(id, "BRL", 550, 2000), ledger.RehydrateBalance(id, "USD", 7, 0)}, nil
	case "payer:mer_1:cus%2F1":
		return []ledger.Balance{ledger.RehydrateBalance(id, "BRL", -3, 0)}, nil
	}
	return nil, ledger.ErrAccountNotFound
}

func (f fakeQueries) MerchantBalances(ctx context.Context, merchantID string, at time.Time) ([]ledger.Balance, error) {
	acc, err := ledger.MerchantAccount(merchantID)
	if err != nil {
		return nil, err
	}
	return f.BalancesAsOf(ctx, acc.String(), at)
}

func (f fakeQueries) Entries(_ context.Context, id string) ([]ledger.Transaction, error) {
	if f.err != nil {
		return nil, f.err
	}
	if id != paymentID {
		return nil, ledger.ErrPaymentNotFound
	}
	payment, _ := ledgers.PostingsOf("payment")
	refund, _ := ledgers.PostingsOf("refund")
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	paid, err := ledger.NewTransfer(ledger.Posting{MessageID: "m1", PaymentID: id, Payer: "cus_1", Merchant: "mer_1",
		Amount: 1050, Currency: "BRL", OccurredAt: at}, payment)
	if err != nil {
		return nil, err
	}
	refunded, err := ledger.NewTransfer(ledger.Posting{MessageID: "m2", PaymentID: id, FactID: refundID, Payer: "cus_1", Merchant: "mer_1",
		Amount: 300, Currency: "BRL", OccurredAt: at.Add(time.Minute)}, refund)
	return []ledger.Transaction{paid, refunded}, err
}

// refundID is the fact id of the refund fakeQueries.Entries answers.
const refundID = "5a0b1b42-5c4a-4d84-9d0c-9a1f2f0b3c11"

// token is the operator token the tests' server accepts.
var token = strings.Repeat("t", access.MinTokenLen)

// newServer serves the API on q, every exchange checked against the API's
// OpenAPI document: each test of the API is also a test of its contract.
func newServer(t *testing.T, q ledgerapi.Queries) *httptest.Server {
	tokens, err := access.NewTokens(token)
	if err != nil {
		t.Fatal(err)
	}
	h := ledgerapi.NewHandler(q, tokens, logtest.Discard(), nil, ledgerapi.Config{})
	srv := httptest.NewServer(apitest.New(t, apidoc.Ledger()).Handler(t, h))
	t.Cleanup(srv.Close)
	return srv
}

// get sends GET path with Authorization: auth (none when empty).
func get(t *testing.T, srv *httptest.Server, path string, auth ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range auth {
		if a != "" {
			req.Header.Add("Authorization", a)
		}
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		name     string
		q        fakeQueries
		path     string
		status   int
		ctype    string
		contains string
	}{
		{"balance", fakeQueries{}, "/accounts/merchant:mer_1/balance", 200, "application/json",
			`{"account_id":"merchant:mer_1","balances":[{"currency":"BRL","posted":550,"pending":2000,"available":550},{"currency":"USD","posted":7,"pending":0,"available":7}]}`},
		{"balance as of", fakeQueries{}, "/accounts/merchant:mer_1/balance?as_of=2026-12-01T09:00:00-03:00", 200, "application/json",
			`{"account_id":"merchant:mer_1","balances":[{"currency":"BRL","posted":100,"pending":0,"available":100}]}`},
		{"balance as of no time", fakeQueries{}, "/accounts/merchant:mer_1/balance?as_of=yesterday", 400, "application/problem+json", `invalid-as-of`},
		{"merchant balance", fakeQueries{}, "/merchants/mer_1/balance", 200, "application/json",
			`{"merchant_id":"mer_1","balances":[{"currency":"BRL","available":550,"pending":2000},{"currency":"USD","available":7,"pending":0}]}`},
		{"merchant balance as of", fakeQueries{}, "/merchants/mer_1/balance?as_of=2026-12-01T12:00:00Z", 200, "application/json",
			`{"merchant_id":"mer_1","balances":[{"currency":"BRL","available":100,"pending":0}]}`},
		{"merchant balance as of twice", fakeQueries{}, "/merchants/mer_1/balance?as_of=2026-12-01T12:00:00Z&as_of=2026-12-01T12:00:00Z", 400, "application/problem+json", `invalid-as-of`},
		{"unknown merchant", fakeQueries{}, "/merchants/nobody/balance", 404, "application/problem+json", `"type":"/problems/account-not-found"`},
		{"control character in merchant", fakeQueries{}, "/merchants/a%0Ab/balance", 400, "application/problem+json", `invalid-merchant-id`},
		// The name's own % travels as %25, as in any path parameter.
		{"balance of a name with an escape", fakeQueries{}, "/accounts/payer:mer_1:cus%252F1/balance", 200, "application/json",
			`{"account_id":"payer:mer_1:cus%2F1","balances":[{"currency":"BRL","posted":-3,"pending":0,"available":-3}]}`},
		{"unknown account", fakeQueries{}, "/accounts/merchant:nobody/balance", 404, "application/problem+json", `"type":"/problems/account-not-found"`},
		{"a raw id is no account's name", fakeQueries{}, "/accounts/mer_1/balance", 400, "application/problem+json", `does not start with a role`},
		{"a name spelled another way", fakeQueries{}, "/accounts/merchant:mer%255F1/balance", 400, "application/problem+json",
			`the account's name is \"merchant:mer_1\"`},
		{"a name not encoded for the URL", fakeQueries{}, "/accounts/payer:mer_1:cus%2F1/balance", 400, "application/problem+json", `invalid-account-id`},
		{"control character in account", fakeQueries{}, "/accounts/merchant:a%0Ab/balance", 400, "application/problem+json", `invalid-account-id`},
		{"entries", fakeQueries{}, "/payments/" + paymentID + "/entries", 200, "application/json",
			`"entries":[{"account_id":"payer:mer_1:cus_1","amount":-1050,"currency":"BRL"},{"account_id":"merchant:mer_1","amount":1050,"currency":"BRL"}]`},
		{"a fact's id", fakeQueries{}, "/payments/" + paymentID + "/entries", 200, "application/json",
			`"kind":"refund","fact_id":"` + refundID + `","amount":300`},
		{"no fact id for a kind a payment has once", fakeQueries{}, "/payments/" + paymentID + "/entries", 200, "application/json",
			`"kind":"payment","amount":1050`},
		{"unknown payment", fakeQueries{}, "/payments/" + strings.Replace(paymentID, "7d", "8d", 1) + "/entries", 404, "application/problem+json", `payment-not-found`},
		{"malformed payment id", fakeQueries{}, "/payments/42/entries", 400, "application/problem+json", `invalid-payment-id`},
		{"unexpected failure", fakeQueries{err: errors.New("dial tcp: secret-host refused")}, "/accounts/merchant:mer_1/balance", 500, "application/problem+json", `"status":500`},
		{"no route", fakeQueries{}, "/nope", 404, "application/problem+json", `not-found`},
		{"no ops route here", fakeQueries{}, "/metrics", 404, "application/problem+json", `not-found`},
		{"openapi", fakeQueries{}, "/openapi.yaml", 200, "application/yaml", string(apidoc.Ledger())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.q)
			resp := get(t, srv, tt.path, "Bearer "+token)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Errorf("status: got %d, want %d (%s)", resp.StatusCode, tt.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.ctype) {
				t.Errorf("content type: got %q, want %q", ct, tt.ctype)
			}
			if !strings.Contains(string(body), tt.contains) {
				t.Errorf("body: got %s, want it to contain %s", body, tt.contains)
			}
			if strings.Contains(string(body), "secret-host") {
				t.Errorf("body leaks the error chain: %s", body)
			}
			// HEAD answers as GET does, without the body.
			req, _ := http.NewRequest(http.MethodHead, srv.URL+tt.path, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			head, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			head.Body.Close()
			if head.StatusCode != resp.StatusCode || head.Header.Get("Content-Type") != resp.Header.Get("Content-Type") || head.ContentLength >= 0 && head.ContentLength != int64(len(body)) {
				t.Errorf("HEAD: %d %q length %d; GET: %d %q length %d", head.StatusCode, head.Header.Get("Content-Type"), head.ContentLength,
					resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
			}
		})
	}
}

// TestEveryRouteNeedsTheToken: each route the router serves against each
// kind of credential, with the exact answer for each.
func TestEveryRouteNeedsTheToken(t *testing.T) {
	srv := newServer(t, fakeQueries{})
	creds := []struct {
		name     string
		headers  []string
		status   int
		typ, www string
	}{
		{"no header", nil, 401, "/problems/authentication-required", "Bearer"},
		{"another scheme", []string{"Basic " + token}, 401, "/problems/malformed-credentials", `Bearer error="invalid_token"`},
		{"bearer without token", []string{"Bearer "}, 401, "/problems/malformed-credentials", `Bearer error="invalid_token"`},
		{"token with a space", []string{"Bearer " + token + " x"}, 401, "/problems/malformed-credentials", `Bearer error="invalid_token"`},
		{"unknown token", []string{"Bearer " + strings.Repeat("u", access.MinTokenLen)}, 401, "/problems/invalid-credentials", `Bearer error="invalid_token"`},
		{"the token but one character", []string{"Bearer " + token[1:]}, 401, "/problems/invalid-credentials", `Bearer error="invalid_token"`},
		{"the token, then another header", []string{"Bearer " + token, "Bearer " + strings.Repeat("u", access.MinTokenLen)}, 401, "/problems/malformed-credentials", `Bearer error="invalid_token"`},
		{"the token twice", []string{"Bearer " + token, "Bearer " + token}, 401, "/problems/malformed-credentials", `Bearer error="invalid_token"`},
		{"the token", []string{"Bearer " + token}, 200, "", ""},
		{"the token, scheme in lower case", []string{"bearer " + token}, 200, "", ""},
	}
	// The path each route is asked on, by its pattern. The routes are the
	// router's (chi.Walk): a route added without an entry here fails, so
	// none is served without its credentials tested.
	paths := map[string]string{
		"GET /accounts/{id}/balance":           "/accounts/merchant:mer_1/balance",
		"GET /payments/{id}/entries":           "/payments/" + paymentID + "/entries",
		"GET /merchants/{merchant_id}/balance": "/merchants/mer_1/balance",
		"GET /accounts/{id}/entries":           "/accounts/merchant:mer_1/entries",
	}
	public := map[string]string{ // route → why it needs no token
		"GET /openapi.yaml": "the contract a client generates its code from",
	}
	var served []string
	h := ledgerapi.NewHandler(nil, nil, logtest.Discard(), nil, ledgerapi.Config{})
	if err := chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served = append(served, method+" "+route)
		return nil
	}); err != nil {
		t.Fatalf("walk the router: %v", err)
	}
	var toTest []string
	for _, r := range served {
		if _, ok := public[r]; ok {
			continue
		}
		path, ok := paths[r]
		if !ok {
			t.Errorf("the router serves %s, which this test does not ask: add it to paths (or to public, with the reason it needs no token)", r)
			continue
		}
		toTest = append(toTest, path)
	}
	for r := range paths {
		if !slices.Contains(served, r) {
			t.Errorf("paths lists %s, which the router does not serve", r)
		}
	}
	if len(toTest) == 0 {
		t.Fatalf("chi.Walk found the routes %v, none to test; the test is not looking where it should", served)
	}
	for _, path := range toTest {
		for _, c := range creds {
			t.Run(path+" "+c.name, func(t *testing.T) {
				res := get(t, srv, path, c.headers...)
				defer res.Body.Close()
				var p struct{ Type string }
				_ = json.NewDecoder(res.Body).Decode(&p)
				if res.StatusCode != c.status || p.Type != c.typ || res.Header.Get("WWW-Authenticate") != c.www {
					t.Errorf("got %d %q WWW-Authenticate %q, want %d %q %q", res.StatusCode, p.Type, res.Header.Get("WWW-Authenticate"), c.status, c.typ, c.www)
				}
			})
		}
	}
	t.Run("no tokens configured", func(t *testing.T) {
		h := ledgerapi.NewHandler(fakeQueries{}, nil, logtest.Discard(), nil, ledgerapi.Config{})
		srv := httptest.NewServer(apitest.New(t, apidoc.Ledger()).Handler(t, h))
		defer srv.Close()
		res := get(t, srv, "/accounts/merchant:mer_1/balance", "Bearer "+token)
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("got %d, want 401: an unconfigured ledger serves no one", res.StatusCode)
		}
	})
}

// TestDatabaseOutageAnswers503 pins that the ledger answers an unreachable
// database as the payments API does: 503, Retry-After and problem+json, with
// nothing of the error chain. ledgerstore wraps an outage in
// dependency.ErrUnavailable (its own test proves that on a real connection).
func TestDatabaseOutageAnswers503(t *testing.T) {
	outage := fmt.Errorf("query balances: %w: dial tcp secret-host:5432: connect: connection refused", dependency.ErrUnavailable)
	srv := newServer(t, fakeQueries{err: outage})
	for _, path := range []string{"/accounts/merchant:mer_1/balance", "/merchants/mer_1/balance", "/payments/" + paymentID + "/entries"} {
		t.Run(path, func(t *testing.T) {
			resp := get(t, srv, path, "Bearer "+token)
			defer resp.Body.Close()
			var p struct {
				Type   string `json:"type"`
				Title  string `json:"title"`
				Status int    `json:"status"`
			}
			body, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			if resp.StatusCode != http.StatusServiceUnavailable || p.Status != http.StatusServiceUnavailable {
				t.Errorf("status: got %d (body %d), want 503", resp.StatusCode, p.Status)
			}
			if got := resp.Header.Get("Retry-After"); got != "1" {
				t.Errorf("Retry-After: got %q, want \"1\"", got)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("content type: got %q, want application/problem+json", ct)
			}
			if p.Type != "/problems/unavailable" || p.Title != "Service Unavailable" {
				t.Errorf("problem: got type %q title %q, want /problems/unavailable, Service Unavailable", p.Type, p.Title)
			}
			if strings.Contains(string(body), "secret-host") {
				t.Errorf("body leaks the error chain: %s", body)
			}
		})
	}
}

func TestEntriesSumToZero(t *testing.T) {
	srv := newServer(t, fakeQueries{})
	resp := get(t, srv, fmt.Sprintf("/payments/%s/entries", paymentID), "Bearer "+token)
	defer resp.Body.Close()
	var got struct {
		Transactions []struct {
			Entries []struct{ Amount int64 } `json:"entries"`
		} `json:"transactions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	for _, tx := range got.Transactions {
		var sum int64
		for _, e := range tx.Entries {
			sum += e.Amount
		}
		if sum != 0 {
			t.Errorf("transaction entries sum to %d, want 0", sum)
		}
	}
}

// TestRoutesAreDocumented: the router serves exactly the operations of the
// OpenAPI document, no more (undocumented) and no fewer (documented in vain).
func TestRoutesAreDocumented(t *testing.T) {
	h := ledgerapi.NewHandler(nil, nil, logtest.Discard(), nil, ledgerapi.Config{})
	apitest.New(t, apidoc.Ledger()).CheckRoutes(t, h.(chi.Routes))
}

// TestAFailureIsLoggedUnderItsRequestID: a 500's cause is logged once, with
// the id its answer's X-Request-Id gave the client, as the document says.
func TestAFailureIsLoggedUnderItsRequestID(t *testing.T) {
	tokens, err := access.NewTokens(token)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	h := ledgerapi.NewHandler(fakeQueries{err: errors.New("dial tcp: secret-host refused")}, tokens, slog.New(slog.NewJSONHandler(&logs, nil)), nil, ledgerapi.Config{})
	srv := httptest.NewServer(apitest.New(t, apidoc.Ledger()).Handler(t, h))
	t.Cleanup(srv.Close)
	res := get(t, srv, "/accounts/merchant:mer_1/balance", "Bearer "+token)
	res.Body.Close()
	id := res.Header.Get("X-Request-Id")
	if res.StatusCode != http.StatusInternalServerError || id == "" {
		t.Fatalf("got %d X-Request-Id %q, want 500 with an id", res.StatusCode, id)
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, `"msg":"request failed"`) {
			if !strings.Contains(line, `"request_id":"`+id+`"`) || !strings.Contains(line, "secret-host") {
				t.Errorf("the failure's line %s, want request_id %s and the cause", line, id)
			}
			return
		}
	}
	t.Errorf("no \"request failed\" line in\n%s", logs.String())
}

// TestAccountIdPatternTakesEveryAccount: the document's AccountId pattern
// matches the name of every account the ledger can have, so the document
// never refuses a name the service answers; the pattern is only the form,
// and the service refuses more (a control character, another spelling).
func TestAccountIdPatternTakesEveryAccount(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(apidoc.Ledger())
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(doc.Components.Schemas["AccountId"].Value.Pattern)
	maxLen := int(*doc.Components.Schemas["AccountId"].Value.MaxLength)
	check := func(merchant, payer string) bool {
		m, errM := ledger.MerchantAccount(merchant)
		p, errP := ledger.PayerAccount(merchant, payer)
		for _, a := range []struct {
			acc ledger.AccountID
			err error
		}{{m, errM}, {p, errP}} {
			if a.err == nil && (!re.MatchString(a.acc.String()) || len(a.acc.String()) > maxLen) {
				t.Errorf("the document refuses account %q (%d bytes)", a.acc, len(a.acc.String()))
				return false
			}
		}
		return true
	}
	long := strings.Repeat("é", 127) + "x" // 255 bytes, each encoded
	for _, ids := range [][2]string{{"mer_1", "cus_1"}, {"m:1%", "ü x"}, {long, long}, {"a/b", "?#"}} {
		check(ids[0], ids[1])
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
	for _, s := range []string{"mer_1", "merchant:", "payer:mer_1", "merchant:a b", "merchant:a%2f", "merchant:ü"} {
		if re.MatchString(s) {
			t.Errorf("the document takes %q, no account's name", s)
		}
		if _, err := ledger.ParseAccountID(s); err == nil {
			t.Errorf("ParseAccountID(%q) took a name the document refuses", s)
		}
	}
}
