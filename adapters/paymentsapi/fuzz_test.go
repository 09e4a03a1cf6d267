package paymentsapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/paymentsapi"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/access/accesstest"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/payments/paymentstest"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// The fuzz targets drive the real router and the real use cases over the
// in-memory repository, so a run costs microseconds and needs no database.
// Their seeds run with every `go test`; `go test -fuzz FuzzCreatePayment
// ./adapters/paymentsapi` explores further. What they hold for any input: the
// server never panics and never answers 5xx, every exchange follows the API's
// OpenAPI document, every refusal is problem+json with a status the API
// documents, and an accepted request stored exactly what the client sent.

// newFuzzHandler returns the API on the in-memory repository, every exchange
// checked by v (made once per fuzz target: loading the document is the slow part).
func newFuzzHandler(t *testing.T, v *apitest.Validator) (http.Handler, *paymentstest.FakeRepository) {
	repo := paymentstest.NewFakeRepository()
	svc := payments.NewService(repo, time.Now, func() string { return uuid.Must(uuid.NewV7()).String() }, payments.Config{})
	store := accesstest.NewFakeStore()
	if _, _, err := access.NewKeys(store, time.Now).Issue(context.Background(), access.Issue{Platform: true, Name: "fuzz", Import: fuzzKey}); err != nil {
		t.Fatal(err)
	}
	h := paymentsapi.NewHandler(svc, access.NewAuthenticator(store, time.Now, access.AuthenticatorConfig{}), logtest.Discard(), nil, paymentsapi.Config{})
	return v.Handler(t, h), repo
}

// fuzzKey is the platform's key of the fuzz targets' handler; serve sends it.
var fuzzKey = "pk_test_plat_fuzzfuzzfuzzfuzz_" + strings.Repeat("f", 52)

// serve runs one request through h in process.
func serve(h http.Handler, method, path, contentType, key string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/", bytes.NewReader(body))
	req.URL.Path = path // set after parsing: the fuzzer's paths need not be valid request URIs
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if key != "" {
		req.Header.Set(paymentsapi.IdempotencyHeader, key)
	}
	req.Header.Set("Authorization", "Bearer "+fuzzKey)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// checkRefusal fails t on a 5xx: whatever the input, bad input is refused
// with a 4xx, never a failure. That each answer is one the OpenAPI document
// gives the route, problem+json and its type included, the validator checks.
func checkRefusal(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("status %d, want a 2xx or 4xx; body %s", rec.Code, rec.Body)
	}
}

type sentPayment struct {
	Amount      json.Number `json:"amount"`
	Currency    string      `json:"currency"`
	PayerID     string      `json:"payer_id"`
	MerchantID  string      `json:"merchant_id"`
	Description string      `json:"description"`
}

type gotPayment struct {
	ID             string `json:"id"`
	Status         string `json:"status"`
	Amount         int64  `json:"amount"`
	RefundedAmount int64  `json:"refunded_amount"`
	Currency       string `json:"currency"`
	PayerID        string `json:"payer_id"`
	MerchantID     string `json:"merchant_id"`
	Description    string `json:"description"`
	Refund         *struct {
		ID     string `json:"id"`
		Amount int64  `json:"amount"`
	} `json:"refund"`
}

func FuzzCreatePayment(f *testing.F) {
	for _, s := range []struct{ body, ct, key string }{
		{`{"amount": 1050, "currency": "BRL", "payer_id": "cus_1", "merchant_id": "mer_1", "description": "coffee"}`, "application/json", ""},
		{`{"amount": 1, "currency": "jpy", "payer_id": "ü'1", "merchant_id": "m;--", "description": "Robert'); DROP TABLE payments;-- ☃"}`, "application/json; charset=utf-8", "key-1"},
		{`{"amount": 9223372036854775807, "currency": "USD", "payer_id": "a", "merchant_id": "b"}`, "application/json", ""},
		{`{"amount": 9223372036854775808, "currency": "USD", "payer_id": "a", "merchant_id": "b"}`, "application/json", ""},
		{`{"amount": -9223372036854775808, "currency": "USD", "payer_id": "a", "merchant_id": "b"}`, "application/json", ""},
		{`{"amount": 10.5, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`, "application/json", ""},
		{`{"amount": 1e3, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`, "application/json", ""},
		{`{"amount": "10", "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`, "application/json", ""},
		{`{"amount": null, "currency": null, "payer_id": null}`, "application/json", ""},
		{`{"amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b", "amount": 2}`, "application/json", ""},
		{`{"amount": 1, "currency": "BRL", "payer_id": "a\u0000", "merchant_id": "\ud800", "description": "\u2028"}`, "application/json", ""},
		{`{"amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b", "extra": {}}`, "application/json", ""},
		{`{"amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b"} {}`, "application/json", ""},
		{`[]`, "application/json", ""},
		{``, "application/json", ""},
		{`{"amount":`, "application/json", ""},
		{"\xff\xfe{", "application/json", ""},
		{`{"AMOUNT": 4242, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`, "application/json", ""},
		{`{"amount": 1, "currency": "ıdr", "payer_id": "a", "merchant_id": "b"}`, "application/json", ""},
		{"{\"amount\": 1, \"currency\": \"BRL\", \"payer_id\": \"a\xff\", \"merchant_id\": \"b\"}", "application/json", ""},
		{`null`, "application/json", ""},
		{`{"amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`, "text/plain", ""},
		{`{"amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`, "application/json; charset", ""},
		{`{"amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`, "application/json", "key with spaces"},
		{`{"amount": 1, "currency": "BRL", "payer_id": "a", "merchant_id": "b"}`, "application/json", strings.Repeat("k", 300)},
	} {
		f.Add([]byte(s.body), s.ct, s.key)
	}
	v := apitest.New(f, apidoc.Payments())
	f.Fuzz(func(t *testing.T, body []byte, contentType, key string) {
		h, _ := newFuzzHandler(t, v)
		rec := serve(h, http.MethodPost, "/payments", contentType, key, body)
		checkRefusal(t, rec)
		if rec.Code != http.StatusCreated {
			return
		}
		// Accepted: the request was one JSON object that means one thing —
		// UTF-8, each field once and by its exact name — and the payment
		// holds exactly what it said, text verbatim and currency upper-case.
		checkUnambiguous(t, body, "amount", "currency", "payer_id", "merchant_id", "description")
		var sent sentPayment
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&sent); err != nil {
			t.Fatalf("201 for a body the JSON decoder refuses (%v): %q", err, body)
		}
		var got gotPayment
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("201 body %q: %v", rec.Body, err)
		}
		if sent.Amount.String() != fmtInt(got.Amount) || got.Amount <= 0 {
			t.Errorf("amount: sent %s, stored %d", sent.Amount, got.Amount)
		}
		if len(sent.Currency) != 3 || got.Currency != strings.ToUpper(sent.Currency) || got.PayerID != sent.PayerID ||
			got.MerchantID != sent.MerchantID || got.Description != sent.Description {
			t.Errorf("stored %+v, sent %+v", got, sent)
		}
		// What payments accepts, the ledger must be able to post, and
		// Postgres must be able to store.
		if _, err := ledger.PayerAccount(got.MerchantID, got.PayerID); err != nil {
			t.Errorf("accepted a party id the ledger refuses: %v", err)
		}
		if strings.ContainsRune(got.Description, 0) {
			t.Errorf("accepted a description with NUL, which Postgres text cannot hold")
		}
		if got.Status != "created" || got.RefundedAmount != 0 {
			t.Errorf("new payment is %q with %d refunded", got.Status, got.RefundedAmount)
		}
		// It reads back as created, and a retry with the key replays it.
		back := serve(h, http.MethodGet, "/payments/"+got.ID, "", "", nil)
		if back.Code != http.StatusOK || !bytes.Equal(back.Body.Bytes(), rec.Body.Bytes()) {
			t.Errorf("GET after create: %d %s, want 200 %s", back.Code, back.Body, rec.Body)
		}
		if key != "" {
			again := serve(h, http.MethodPost, "/payments", contentType, key, body)
			if again.Code != http.StatusCreated || again.Header().Get(paymentsapi.ReplayedHeader) != "true" || !bytes.Equal(again.Body.Bytes(), rec.Body.Bytes()) {
				t.Errorf("retry with key %q: %d replayed=%q %s, want the first response", key, again.Code, again.Header().Get(paymentsapi.ReplayedHeader), again.Body)
			}
		}
	})
}

func FuzzRefund(f *testing.F) {
	for _, s := range []struct{ id, body, ct, key string }{
		{"", `{"amount": 500}`, "application/json", ""},
		{"", `{"amount": 1000}`, "application/json", "r-1"},
		{"", `{"amount": 1001}`, "application/json", ""},
		{"", `{"amount": 0}`, "application/json", ""},
		{"", `{"amount": -1}`, "application/json", ""},
		{"", `{"amount": 1.5}`, "application/json", ""},
		{"", `{"amount": 99999999999999999999}`, "application/json", ""},
		{"", `{"amount": 1, "reason": "x"}`, "application/json", ""},
		{"", `{}`, "application/json", ""},
		{"", `{"Amount": 1}`, "application/json", ""},
		{"", `{"amount": 1, "amount": 1000}`, "application/json", ""},
		{"", `{"amount": 1}`, "application/xml", ""},
		{"not-a-uuid", `{"amount": 1}`, "application/json", ""},
		{"' OR 1=1--", `{"amount": 1}`, "application/json", ""},
		{"01a229a3-739d-7ee0-9fd1-d6781f462db2", `{"amount": 1}`, "application/json", ""},
		{"01A229A3-739D-7EE0-9FD1-D6781F462DB2", `{"amount": 1}`, "application/json", ""},
		{"{01a229a3-739d-7ee0-9fd1-d6781f462db2}", `{"amount": 1}`, "application/json", ""},
		{"urn:uuid:01a229a3-739d-7ee0-9fd1-d6781f462db2", `{"amount": 1}`, "application/json", ""},
	} {
		f.Add(s.id, []byte(s.body), s.ct, s.key)
	}
	v := apitest.New(f, apidoc.Payments())
	f.Fuzz(func(t *testing.T, id string, body []byte, contentType, key string) {
		h, _ := newFuzzHandler(t, v)
		created := serve(h, http.MethodPost, "/payments", "application/json", "",
			[]byte(`{"amount": 1000, "currency": "BRL", "payer_id": "cus_1", "merchant_id": "mer_1"}`))
		var p gotPayment
		if err := json.Unmarshal(created.Body.Bytes(), &p); created.Code != http.StatusCreated || err != nil {
			t.Fatalf("create: %d %s", created.Code, created.Body)
		}
		if id == "" { // the seeds' way of naming the payment just created
			id = p.ID
		}
		rec := serve(h, http.MethodPost, "/payments/"+id+"/refunds", contentType, key, body)
		checkRefusal(t, rec)
		after := serve(h, http.MethodGet, "/payments/"+p.ID, "", "", nil)
		var now gotPayment
		if err := json.Unmarshal(after.Body.Bytes(), &now); after.Code != http.StatusOK || err != nil {
			t.Fatalf("GET: %d %s", after.Code, after.Body)
		}
		if rec.Code != http.StatusCreated {
			if now.RefundedAmount != 0 || now.Status != "created" {
				t.Fatalf("refused refund (%d) changed the payment: %+v", rec.Code, now)
			}
			return
		}
		var got gotPayment
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Refund == nil {
			t.Fatalf("201 body %q: %v", rec.Body, err)
		}
		checkUnambiguous(t, body, "amount")
		var sent struct {
			Amount json.Number `json:"amount"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&sent); err != nil || sent.Amount.String() != fmtInt(got.Refund.Amount) {
			t.Fatalf("refunded %d for a request of %q (%v)", got.Refund.Amount, body, err)
		}
		if got.ID != p.ID || now.RefundedAmount != got.Refund.Amount || got.Refund.Amount <= 0 || got.Refund.Amount > 1000 {
			t.Fatalf("refund of %d left the payment at %+v", got.Refund.Amount, now)
		}
	})
}

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

// checkUnambiguous fails t unless body, which the API accepted, is valid
// UTF-8 and a JSON object whose every member name is one of names, exactly,
// and given once: a body another reader could read otherwise must have been
// refused. It reads the names with encoding/json v1's tokenizer, which,
// unlike the API's decoder, matches nothing and refuses neither repeats nor
// another case.
func checkUnambiguous(t *testing.T, body []byte, names ...string) {
	t.Helper()
	if !utf8.Valid(body) {
		t.Errorf("accepted a body that is not UTF-8: %q", body)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("accepted a body that is not a JSON object (%v): %q", err, body)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("accepted %q: %v", body, err)
		}
		name, _ := tok.(string)
		if seen[name] || !slices.Contains(names, name) {
			t.Errorf("accepted a body with the member %q repeated or not one of %v: %q", name, names, body)
		}
		seen[name] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			t.Fatalf("accepted %q: %v", body, err)
		}
	}
}
