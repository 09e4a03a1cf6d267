package paymentsoutbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/payments-outbox/payments-outbox/adapters/ledgerapi"
	"github.com/payments-outbox/payments-outbox/adapters/paymentsapi"
	"github.com/payments-outbox/payments-outbox/adapters/webhooksapi"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/dependency"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	"github.com/payments-outbox/payments-outbox/domain/payment"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// errorPackages are the packages whose errors can reach the HTTP APIs: the
// domains and the application packages the APIs call.
var errorPackages = []string{"domain/payment", "domain/ledger", "application/dependency", "application/idempotency", "application/payments", "application/access", "application/ledgers", "application/webhooks"}

// route is a way an error reaches an API: the API's handler with a fake that
// fails with err where the API calls out, and a request that makes the call.
type route struct {
	name  string
	doc   []byte
	serve func(err error) (http.Handler, *http.Request)
}

var (
	paymentsUseCase = route{"the payments API's use cases", apidoc.Payments(), func(err error) (http.Handler, *http.Request) {
		h := paymentsapi.NewHandler(failingService{err}, failingAuth{nil}, logtest.Discard(), nil, paymentsapi.Config{})
		return h, authorized(httptest.NewRequest(http.MethodGet, "/payments/7d4f8f7c-1d2b-4a53-b8d4-1d5b4cf1b7a2", nil))
	}}
	paymentsCreate = route{"the payments API's create", apidoc.Payments(), func(err error) (http.Handler, *http.Request) {
		h := paymentsapi.NewHandler(failingService{err}, failingAuth{nil}, logtest.Discard(), nil, paymentsapi.Config{})
		req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(`{"amount": 1000000000000, "currency": "BRL", "payer_id": "cus_1", "merchant_id": "mer_1"}`))
		req.Header.Set("Content-Type", "application/json")
		return h, authorized(req)
	}}
	paymentsList = route{"the payments API's list", apidoc.Payments(), func(err error) (http.Handler, *http.Request) {
		h := paymentsapi.NewHandler(failingService{err}, failingAuth{nil}, logtest.Discard(), nil, paymentsapi.Config{})
		return h, authorized(httptest.NewRequest(http.MethodGet, "/payments?merchant_id=mer_1", nil))
	}}
	paymentsAuth = route{"the payments API's authenticator", apidoc.Payments(), func(err error) (http.Handler, *http.Request) {
		h := paymentsapi.NewHandler(failingService{nil}, failingAuth{err}, logtest.Discard(), nil, paymentsapi.Config{})
		return h, authorized(httptest.NewRequest(http.MethodGet, "/payments/7d4f8f7c-1d2b-4a53-b8d4-1d5b4cf1b7a2", nil))
	}}
	webhooksUseCase = route{"the webhooks API's use cases", apidoc.Webhooks(), func(err error) (http.Handler, *http.Request) {
		h := webhooksapi.NewHandler(failingWebhooks{err}, failingAuth{nil}, logtest.Discard(), nil, webhooksapi.Config{})
		req := httptest.NewRequest(http.MethodPost, "/webhook_endpoints", strings.NewReader(`{"url": "https://shop.example/hooks", "enabled_events": ["*"], "merchant_id": "mer_1"}`))
		req.Header.Set("Content-Type", "application/json")
		return h, authorized(req)
	}}
	webhooksList = route{"the webhooks API's list", apidoc.Webhooks(), func(err error) (http.Handler, *http.Request) {
		h := webhooksapi.NewHandler(failingWebhooks{err}, failingAuth{nil}, logtest.Discard(), nil, webhooksapi.Config{})
		return h, authorized(httptest.NewRequest(http.MethodGet, "/webhook_endpoints?merchant_id=mer_1", nil))
	}}
	webhooksRedeliver = route{"the webhooks API's redelivery", apidoc.Webhooks(), func(err error) (http.Handler, *http.Request) {
		h := webhooksapi.NewHandler(failingWebhooks{err}, failingAuth{nil}, logtest.Discard(), nil, webhooksapi.Config{})
		return h, authorized(httptest.NewRequest(http.MethodPost, "/webhook_endpoints/we_1/deliveries/evt_1/redeliver", nil))
	}}
	webhooksRecover = route{"the webhooks API's recovery", apidoc.Webhooks(), func(err error) (http.Handler, *http.Request) {
		h := webhooksapi.NewHandler(failingWebhooks{err}, failingAuth{nil}, logtest.Discard(), nil, webhooksapi.Config{})
		req := httptest.NewRequest(http.MethodPost, "/webhook_endpoints/we_1/recover", strings.NewReader(`{"since": "2026-11-29T00:00:00Z"}`))
		req.Header.Set("Content-Type", "application/json")
		return h, authorized(req)
	}}
	webhooksAuth = route{"the webhooks API's authenticator", apidoc.Webhooks(), func(err error) (http.Handler, *http.Request) {
		h := webhooksapi.NewHandler(failingWebhooks{nil}, failingAuth{err}, logtest.Discard(), nil, webhooksapi.Config{})
		return h, authorized(httptest.NewRequest(http.MethodGet, "/webhook_endpoints/we_1", nil))
	}}
	ledgerQueries = route{"the ledger API's queries", apidoc.Ledger(), func(err error) (http.Handler, *http.Request) {
		h := ledgerapi.NewHandler(failingQueries{err}, failingTokens{nil}, logtest.Discard(), nil, ledgerapi.Config{})
		return h, authorized(httptest.NewRequest(http.MethodGet, "/accounts/merchant:mer_1/balance", nil))
	}}
	ledgerEntries = route{"the ledger API's list of entries", apidoc.Ledger(), func(err error) (http.Handler, *http.Request) {
		h := ledgerapi.NewHandler(failingQueries{err}, failingTokens{nil}, logtest.Discard(), nil, ledgerapi.Config{})
		return h, authorized(httptest.NewRequest(http.MethodGet, "/accounts/merchant:mer_1/entries", nil))
	}}
	ledgerTokens = route{"the ledger API's token check", apidoc.Ledger(), func(err error) (http.Handler, *http.Request) {
		h := ledgerapi.NewHandler(failingQueries{nil}, failingTokens{err}, logtest.Discard(), nil, ledgerapi.Config{})
		return h, authorized(httptest.NewRequest(http.MethodGet, "/accounts/merchant:mer_1/balance", nil))
	}}
)

// answered says, for every exported Err… of errorPackages, how it reaches a
// client: the error as it is returned (wrapped, or the typed error that
// matches it) and the routes it comes by, or why it never reaches one.
var answered = map[string]struct {
	err    error
	routes []route
	never  string
}{
	"payment.ErrNotFound":             {err: fmt.Errorf("%w: p1", payment.ErrNotFound), routes: []route{paymentsUseCase}},
	"payment.ErrInvalidAmount":        {err: fmt.Errorf("%w: overflow", payment.ErrInvalidAmount), routes: []route{paymentsUseCase}},
	"payment.ErrCurrencyMismatch":     {err: fmt.Errorf("%w: BRL+USD", payment.ErrCurrencyMismatch), routes: []route{paymentsUseCase}},
	"payment.ErrRefundExceedsAmount":  {err: fmt.Errorf("%w: 5 left", payment.ErrRefundExceedsAmount), routes: []route{paymentsUseCase}},
	"payment.ErrCaptureExceedsAmount": {err: fmt.Errorf("%w: 2501 of 2500", payment.ErrCaptureExceedsAmount), routes: []route{paymentsUseCase}},
	"payment.ErrInvalidTransition":    {err: fmt.Errorf("%w: capture of a payment canceled", payment.ErrInvalidTransition), routes: []route{paymentsUseCase}},
	"payment.ErrAuthorizationExpired": {err: fmt.Errorf("%w: before yesterday", payment.ErrAuthorizationExpired), routes: []route{paymentsUseCase}},
	"payment.ErrInvalid":              {err: &payment.ValidationError{Problems: []payment.FieldProblem{{Field: "amount", Detail: "must be positive"}}}, routes: []route{paymentsUseCase}},
	"idempotency.ErrInvalidKey":       {err: fmt.Errorf("%w: too long", idempotency.ErrInvalidKey), routes: []route{paymentsUseCase, webhooksUseCase, webhooksRecover}},
	"idempotency.ErrKeyReused":        {err: idempotency.ErrKeyReused, routes: []route{paymentsUseCase, webhooksUseCase, webhooksRecover}},
	"idempotency.ErrKeyInFlight":      {err: idempotency.ErrKeyInFlight, routes: []route{paymentsUseCase, webhooksUseCase, webhooksRecover}},
	"payments.ErrAmountLimit":         {err: fmt.Errorf("%w: 1000000000000 is over 999999999999 (minor units)", payments.ErrAmountLimit), routes: []route{paymentsCreate}},
	"dependency.ErrUnavailable":       {err: fmt.Errorf("%w: dial tcp", dependency.ErrUnavailable), routes: []route{paymentsUseCase, paymentsAuth, ledgerQueries, webhooksUseCase, webhooksAuth}},
	"access.ErrMalformedKey":          {err: access.ErrMalformedKey, routes: []route{paymentsAuth, ledgerTokens, webhooksAuth}},
	"access.ErrUnknownKey":            {err: access.ErrUnknownKey, routes: []route{paymentsAuth, ledgerTokens, webhooksAuth}},
	"access.ErrRateLimited":           {err: access.ErrRateLimited, routes: []route{webhooksAuth}},
	"access.ErrKeyExists":             {never: "only issuing a key (`payments apikey`) returns it; no route issues keys"},
	"access.ErrUnauthenticated":       {never: "every route authenticates first, so a use case sees it only through a bug, which is answered 500"},
	"ledger.ErrInvalidAccount":        {err: fmt.Errorf("%w: empty", ledger.ErrInvalidAccount), routes: []route{ledgerQueries}},
	"ledger.ErrAccountNotFound":       {err: ledger.ErrAccountNotFound, routes: []route{ledgerQueries}},
	"ledger.ErrPaymentNotFound":       {err: ledger.ErrPaymentNotFound, routes: []route{ledgerQueries}},
	"ledger.ErrInvalidTransaction":    {never: "only posting an event returns it, which the inbox parks; the API only reads"},
	"ledger.ErrBalanceLimit":          {never: "only posting an event returns it, which the inbox parks; the API only reads"},
	"ledger.ErrOutOfOrder":            {never: "only applying an event returns it, which the inbox retries or parks; the API only reads"},
	"ledger.ErrNoHold":                {never: "only applying an event returns it, which the inbox retries or parks; the API only reads"},
	"ledger.ErrHoldReleased":          {never: "only applying an event returns it, which the inbox retries or parks; the API only reads"},
	"ledger.ErrCaptureExceedsHold":    {never: "only applying an event returns it, which the inbox retries or parks; the API only reads"},
	"ledger.ErrRefundExceedsCaptured": {never: "only applying an event returns it, which the inbox retries or parks; the API only reads"},
	"ledger.ErrCurrencyMismatch":      {never: "only applying an event returns it, which the inbox retries or parks; the API only reads"},
	"ledger.ErrUnknownCurrency":       {never: "only applying an event returns it, which the inbox retries or parks; the API only reads"},
	"ledger.ErrPaymentConflict":       {never: "only applying an event returns it, which the inbox retries or parks; the API only reads"},

	// The webhooks API's.
	"webhooks.ErrInvalidEndpoint":  {err: fmt.Errorf("%w: the url must be https", webhooks.ErrInvalidEndpoint), routes: []route{webhooksUseCase}},
	"webhooks.ErrEndpointNotFound": {err: fmt.Errorf("%w: we_1", webhooks.ErrEndpointNotFound), routes: []route{webhooksUseCase, webhooksRedeliver, webhooksRecover}},
	"webhooks.ErrEventNotFound":    {err: fmt.Errorf("%w: evt_1", webhooks.ErrEventNotFound), routes: []route{webhooksRedeliver}},
	"webhooks.ErrEndpointDeleted":  {err: fmt.Errorf("%w: we_1", webhooks.ErrEndpointDeleted), routes: []route{webhooksRedeliver}},
	"webhooks.ErrEndpointDisabled": {err: fmt.Errorf("%w: we_1", webhooks.ErrEndpointDisabled), routes: []route{webhooksRedeliver, webhooksRecover}},
	"webhooks.ErrSealed":           {never: "only a WEBHOOKS_SECRETS_KEY changed under the stored secrets returns it, to a delivery worker opening a secret: the operator's fault, logged, never a client's"},
	"webhooks.ErrInvalidListQuery": {err: fmt.Errorf("%w: limit must be from 1 to 100", webhooks.ErrInvalidListQuery), routes: []route{webhooksList}},
	"webhooks.ErrUnknownCursor":    {err: fmt.Errorf("%w: we_1", webhooks.ErrUnknownCursor), routes: []route{webhooksList, webhooksRecover}},
	"webhooks.ErrTooManyEndpoints": {err: fmt.Errorf("%w: 50 of mer_1", webhooks.ErrTooManyEndpoints), routes: []route{webhooksUseCase}},
	"webhooks.ErrInvalidRecover":   {err: fmt.Errorf("%w: since is in the future", webhooks.ErrInvalidRecover), routes: []route{webhooksRecover}},
	"webhooks.ErrAmountLimit":      {never: "only checking an event returns it, which the queue dead-letters; the API only reads"},

	// The lists' errors.
	"payments.ErrInvalidListQuery": {err: fmt.Errorf("%w: limit must be from 1 to 100", payments.ErrInvalidListQuery), routes: []route{paymentsList}},
	"payments.ErrUnknownCursor":    {err: fmt.Errorf("%w: p1", payments.ErrUnknownCursor), routes: []route{paymentsList}},
	"ledgers.ErrInvalidListQuery":  {err: fmt.Errorf("%w: limit must be from 1 to 100", ledgers.ErrInvalidListQuery), routes: []route{ledgerEntries}},
	"ledgers.ErrUnknownCursor":     {err: fmt.Errorf("%w: 7", ledgers.ErrUnknownCursor), routes: []route{ledgerEntries}},
	"ledgers.ErrAmountLimit":       {never: "only checking an event returns it, which the queue dead-letters; the API only reads"},
}

// TestEveryErrorIsAProblemTheAPIDocuments finds the exported Err… variables
// of errorPackages by parsing their source, so that a new error is listed
// without being told, and requires each to be answered on every route it
// comes by as problem+json, not 500, with a problem type the API's OpenAPI
// document lists (ProblemType) and the status the document gives that type.
// An error nobody mapped is answered 500 and logged as unexpected: the
// client learns nothing it can act on.
func TestEveryErrorIsAProblemTheAPIDocuments(t *testing.T) {
	var found []string
	for _, dir := range errorPackages {
		found = append(found, exportedErrors(t, dir)...)
	}
	if len(found) < 10 {
		t.Fatalf("found the errors %v; the test is not looking where it should", found)
	}
	for name := range answered {
		if !slices.Contains(found, name) {
			t.Errorf("answered lists %s, which none of %v declares", name, errorPackages)
		}
	}
	for _, name := range found {
		a, ok := answered[name]
		switch {
		case !ok:
			t.Errorf("%s is a new error: map it to a problem in the API that returns it (writeError), document the problem type in the API's OpenAPI document, and add it to answered (or say there why no client ever gets it)", name)
			continue
		case a.never != "":
			continue
		case len(a.routes) == 0:
			t.Errorf("%s: answered gives neither a route nor a reason it reaches none", name)
			continue
		}
		for _, rt := range a.routes {
			t.Run(name+"/"+rt.name, func(t *testing.T) {
				h, req := rt.serve(a.err)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				res := rec.Result()
				body, _ := io.ReadAll(res.Body)
				var p struct {
					Type   string `json:"type"`
					Status int    `json:"status"`
				}
				if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
					t.Fatalf("%s by %s: %d %q, want problem+json; body %s", name, rt.name, res.StatusCode, ct, body)
				}
				if err := json.Unmarshal(body, &p); err != nil {
					t.Fatalf("%s by %s: %v; body %s", name, rt.name, err, body)
				}
				if res.StatusCode >= 500 && res.StatusCode != http.StatusServiceUnavailable || p.Type == "/problems/internal" {
					t.Fatalf("%s by %s is answered %d %s: the API's writeError does not map it, so the client learns nothing it can act on", name, rt.name, res.StatusCode, p.Type)
				}
				documented := problemTypes(t, rt.doc)
				want, ok := documented[p.Type]
				switch {
				case !ok:
					t.Errorf("%s by %s is answered %d %s, a problem type its OpenAPI document does not list (components.schemas.ProblemType)", name, rt.name, res.StatusCode, p.Type)
				case want != 0 && want != res.StatusCode:
					t.Errorf("%s by %s is answered %d %s; the OpenAPI document gives that type the status %d", name, rt.name, res.StatusCode, p.Type, want)
				}
			})
		}
	}
}

// exportedErrors returns the exported package-level variables named Err… in
// dir's non-test Go files, as "package.ErrName".
func exportedErrors(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "Err") && n.IsExported() {
						names = append(names, f.Name.Name+"."+n.Name)
					}
				}
			}
		}
	}
	return names
}

// problemTypes returns the problem types doc lists, each with the status its
// description starts with (0 when it names none).
func problemTypes(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	d, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := d.Components.Schemas["ProblemType"]
	if s == nil || len(s.Value.OneOf) == 0 {
		t.Fatal("the OpenAPI document has no schema ProblemType listing the problem types (oneOf)")
	}
	out := map[string]int{}
	for _, o := range s.Value.OneOf {
		c, ok := o.Value.Const.(string)
		if !ok {
			continue
		}
		status, _ := strconv.Atoi(o.Value.Description[:min(3, len(o.Value.Description))])
		out[c] = status
	}
	return out
}

func authorized(r *http.Request) *http.Request {
	r.Header.Set("Authorization", "Bearer "+strings.Repeat("t", access.MinTokenLen))
	return r
}

type failingService struct{ err error }

func (f failingService) Create(context.Context, payments.CreatePayment) (payments.Committed, error) {
	return payments.Committed{}, f.err
}

func (f failingService) Get(context.Context, access.Principal, payment.ID) (*payment.Payment, error) {
	return nil, f.err
}

func (f failingService) Refund(context.Context, payments.RefundPayment) (payments.Committed, error) {
	return payments.Committed{}, f.err
}

func (f failingService) List(context.Context, payments.ListPayments) (payments.Page, error) {
	return payments.Page{}, f.err
}

func (f failingService) Capture(context.Context, payments.CapturePayment) (payments.Committed, error) {
	return payments.Committed{}, f.err
}

func (f failingService) Cancel(context.Context, payments.CancelPayment) (payments.Committed, error) {
	return payments.Committed{}, f.err
}

type failingAuth struct{ err error }

func (f failingAuth) Authenticate(context.Context, string) (access.Principal, error) {
	if f.err != nil {
		return access.Principal{}, f.err
	}
	return access.PlatformPrincipal("key"), nil
}

// failingWebhooks fails every use case of the webhooks API with err.
type failingWebhooks struct{ err error }

func (f failingWebhooks) Create(context.Context, webhooks.CreateEndpoint) (webhooks.Created, error) {
	return webhooks.Created{}, f.err
}
func (f failingWebhooks) List(context.Context, webhooks.ListEndpoints) (webhooks.EndpointPage, error) {
	return webhooks.EndpointPage{}, f.err
}
func (f failingWebhooks) Get(context.Context, access.Principal, string) (webhooks.Endpoint, error) {
	return webhooks.Endpoint{}, f.err
}
func (f failingWebhooks) Delete(context.Context, access.Principal, string) (webhooks.Endpoint, error) {
	return webhooks.Endpoint{}, f.err
}
func (f failingWebhooks) RotateSecret(context.Context, webhooks.RotateSecret) (webhooks.Created, error) {
	return webhooks.Created{}, f.err
}
func (f failingWebhooks) Attempts(context.Context, webhooks.ListAttempts) (webhooks.AttemptPage, error) {
	return webhooks.AttemptPage{}, f.err
}
func (f failingWebhooks) Redeliver(context.Context, webhooks.Redeliver) error { return f.err }
func (f failingWebhooks) Recover(context.Context, webhooks.Recover) (webhooks.Recovery, error) {
	return webhooks.Recovery{}, f.err
}

type failingQueries struct{ err error }

func (f failingQueries) BalancesAsOf(context.Context, string, time.Time) ([]ledger.Balance, error) {
	return nil, f.err
}
func (f failingQueries) MerchantBalances(context.Context, string, time.Time) ([]ledger.Balance, error) {
	return nil, f.err
}
func (f failingQueries) Entries(context.Context, string) ([]ledger.Transaction, error) {
	return nil, f.err
}
func (f failingQueries) AccountEntries(context.Context, ledgers.ListEntries) (ledgers.EntriesPage, error) {
	return ledgers.EntriesPage{}, f.err
}

type failingTokens struct{ err error }

func (f failingTokens) Check(string) error { return f.err }
