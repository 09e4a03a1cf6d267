// Package ledgerapi is the ledger service's read-only HTTP API on chi:
// balances per account (named as the chart of accounts names them,
// docs/LEDGER.md) and the ledger transactions of a payment. The ledger
// is an internal service: every route needs an operator token
// (Authorization: Bearer, one of LEDGER_API_TOKENS), checked by hash. Errors
// are RFC 9457 problem+json, mapped in one place (writeError). The router
// and the middleware come from httpserver, which the payments API shares;
// the operational endpoints are on the service's other listener.
//
// The contract is api/ledger.openapi.yaml, served on GET /openapi.yaml; every
// test here checks its exchanges against it (api/apitest).
package ledgerapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// Queries is what the API needs of the application (ledgers.Service).
// A zero asOf is now.
type Queries interface {
	BalancesAsOf(ctx context.Context, account string, asOf time.Time) ([]ledger.Balance, error)
	MerchantBalances(ctx context.Context, merchantID string, asOf time.Time) ([]ledger.Balance, error)
	Entries(ctx context.Context, paymentID string) ([]ledger.Transaction, error)
	AccountEntries(ctx context.Context, l ledgers.ListEntries) (ledgers.EntriesPage, error)
}

// Tokens checks an operator token (access.Tokens).
type Tokens interface {
	// Check errors: access.ErrMalformedKey, access.ErrUnknownKey.
	Check(token string) error
}

// Config tunes NewHandler; the zero value is a handler with the default
// request timeout, and neither metrics nor tracing.
type Config struct {
	// RequestTimeout bounds each request's work (0: httpserver's default),
	// so a database outage answers 503 quickly instead of hanging the client.
	RequestTimeout time.Duration
	// TracerProvider, when set, traces every request (httpserver.Config).
	TracerProvider trace.TracerProvider
}

// NewHandler returns the API's router: q's read queries, each request
// carrying one of the operator tokens (nil: none is accepted), its
// unexpected errors logged to log.
// Every request is counted in metrics when it is not nil.
func NewHandler(q Queries, tokens Tokens, log *slog.Logger, metrics *httpserver.Metrics, cfg Config) http.Handler {
	a := &api{q: q, log: log}
	r := httpserver.NewRouter(log, metrics, httpserver.Config{OpenAPI: apidoc.Ledger(), TracerProvider: cfg.TracerProvider})
	r.Group(func(r chi.Router) {
		r.Use(httpserver.Timeout(cfg.RequestTimeout))
		r.Use(httpserver.RequireBearer(func(ctx context.Context, token string) (context.Context, error) {
			return ctx, checkToken(tokens, token)
		}, a.writeError))
		r.Get("/accounts/{id}/balance", a.balance)
		r.Get("/accounts/{id}/entries", a.accountEntries)
		r.Get("/merchants/{merchant_id}/balance", a.merchantBalance)
		r.Get("/payments/{id}/entries", a.entries)
	})
	return r
}

// checkToken checks token against the operator tokens and turns a refusal
// into the 401 answers httpserver writes: malformed or invalid credentials.
func checkToken(tokens Tokens, token string) error {
	if tokens == nil {
		return httpserver.ErrInvalidCredentials
	}
	err := tokens.Check(token)
	switch {
	case errors.Is(err, access.ErrMalformedKey):
		return fmt.Errorf("%w: %w", httpserver.ErrMalformedCredentials, err)
	case err != nil:
		return fmt.Errorf("%w: %w", httpserver.ErrInvalidCredentials, err)
	}
	return nil
}

type api struct {
	q   Queries
	log *slog.Logger
}

// balanceResponse is the wire shape of GET /accounts/{id}/balance.
type balanceResponse struct {
	AccountID string            `json:"account_id"`
	Balances  []currencyBalance `json:"balances"`
}

// currencyBalance is one currency of an account's balance.
type currencyBalance struct {
	Currency  string `json:"currency"`
	Posted    int64  `json:"posted"`
	Pending   int64  `json:"pending"`
	Available int64  `json:"available"`
}

// merchantBalanceResponse is the wire shape of GET
// /merchants/{merchant_id}/balance.
type merchantBalanceResponse struct {
	MerchantID string                    `json:"merchant_id"`
	Balances   []merchantCurrencyBalance `json:"balances"`
}

type merchantCurrencyBalance struct {
	Currency  string `json:"currency"`
	Available int64  `json:"available"`
	Pending   int64  `json:"pending"`
}

// asOf reads the as_of query parameter: an RFC 3339 time, or none (now).
func asOf(r *http.Request) (time.Time, error) {
	raw, ok := r.URL.Query()["as_of"]
	if !ok {
		return time.Time{}, nil
	}
	if len(raw) != 1 {
		return time.Time{}, errors.New("as_of is given more than once")
	}
	t, err := time.Parse(time.RFC3339Nano, raw[0])
	if err != nil {
		return time.Time{}, fmt.Errorf("as_of %q is not an RFC 3339 time, such as 2026-12-01T12:00:00Z", raw[0])
	}
	return t, nil
}

func invalidAsOf(w http.ResponseWriter, err error) {
	httpserver.WriteProblem(w, httpserver.NewProblem(http.StatusBadRequest, "invalid-as-of", err.Error()))
}

// pathParam returns the path parameter name, unescaped once: chi routed on
// the escaped path when it holds an escape that decoding would change (such
// as %2F), and then the parameter is still escaped.
func pathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if r.URL.RawPath != "" {
		if u, err := url.PathUnescape(v); err == nil {
			v = u
		}
	}
	return v
}

// merchantBalance answers GET /merchants/{merchant_id}/balance: the
// merchant's available (posted) and pending (held) amounts per currency.
// merchant_id is the merchant's id, as the payments service names it.
func (a *api) merchantBalance(w http.ResponseWriter, r *http.Request) {
	at, err := asOf(r)
	if err != nil {
		invalidAsOf(w, err)
		return
	}
	id := pathParam(r, "merchant_id")
	bs, err := a.q.MerchantBalances(r.Context(), id, at)
	if errors.Is(err, ledger.ErrInvalidAccount) {
		httpserver.WriteProblem(w, httpserver.NewProblem(http.StatusBadRequest, "invalid-merchant-id",
			"not a merchant id: "+strings.TrimPrefix(err.Error(), ledger.ErrInvalidAccount.Error()+": ")))
		return
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	resp := merchantBalanceResponse{MerchantID: id, Balances: make([]merchantCurrencyBalance, 0, len(bs))}
	for _, b := range bs {
		resp.Balances = append(resp.Balances, merchantCurrencyBalance{Currency: b.Currency(), Available: b.Available(), Pending: b.Pending()})
	}
	httpserver.WriteJSON(w, http.StatusOK, resp)
}

// balance answers GET /accounts/{id}/balance. id is the account's canonical
// name (ledger.ParseAccountID), sent as any path parameter is: the name's
// own "%" travel as "%25".
func (a *api) balance(w http.ResponseWriter, r *http.Request) {
	at, err := asOf(r)
	if err != nil {
		invalidAsOf(w, err)
		return
	}
	id := pathParam(r, "id")
	bs, err := a.q.BalancesAsOf(r.Context(), id, at)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	resp := balanceResponse{AccountID: id, Balances: make([]currencyBalance, 0, len(bs))}
	for _, b := range bs {
		resp.Balances = append(resp.Balances, currencyBalance{Currency: b.Currency(), Posted: b.Posted(),
			Pending: b.Pending(), Available: b.Available()})
	}
	httpserver.WriteJSON(w, http.StatusOK, resp)
}

// entriesResponse is the wire shape of GET /payments/{id}/entries.
type entriesResponse struct {
	PaymentID    string            `json:"payment_id"`
	Transactions []transactionJSON `json:"transactions"`
}

type transactionJSON struct {
	MessageID  string      `json:"message_id"`
	Kind       string      `json:"kind"`
	FactID     string      `json:"fact_id,omitempty"` // tells apart the facts of one kind on a payment: a refund's id
	Amount     int64       `json:"amount"`
	Currency   string      `json:"currency"`
	OccurredAt time.Time   `json:"occurred_at"`
	Entries    []entryJSON `json:"entries"`
}

type entryJSON struct {
	AccountID string `json:"account_id"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
}

func (a *api) entries(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		httpserver.WriteProblem(w, httpserver.NewProblem(http.StatusBadRequest, "invalid-payment-id", "the payment id is not a UUID"))
		return
	}
	txs, err := a.q.Entries(r.Context(), id.String())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	resp := entriesResponse{PaymentID: id.String(), Transactions: make([]transactionJSON, 0, len(txs))}
	for _, tx := range txs {
		resp.Transactions = append(resp.Transactions, toTransactionJSON(tx))
	}
	httpserver.WriteJSON(w, http.StatusOK, resp)
}

// writeError is the only place that turns an error into a response: the
// ledger's own errors here, the rest — an unreachable database, a client
// gone, anything unexpected — by httpserver.WriteError, the table every
// service shares.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var p httpserver.Problem
	switch {
	case errors.Is(err, ledger.ErrInvalidAccount):
		// The reason names only what the client sent (and the canonical
		// name, when it sent another spelling of one).
		p = httpserver.NewProblem(http.StatusBadRequest, "invalid-account-id",
			"not an account's name ("+accountForms()+", each id percent-encoded): "+
				strings.TrimPrefix(err.Error(), ledger.ErrInvalidAccount.Error()+": "))
	case errors.Is(err, ledger.ErrAccountNotFound):
		p = httpserver.NewProblem(http.StatusNotFound, "account-not-found", "nothing was ever posted to or held for this account (by as_of, when given)")
	case errors.Is(err, ledger.ErrPaymentNotFound):
		p = httpserver.NewProblem(http.StatusNotFound, "payment-not-found", "the ledger has no transaction for this payment")
	case errors.Is(err, ledgers.ErrInvalidListQuery):
		p = httpserver.NewProblem(http.StatusBadRequest, "invalid-query-parameter", err.Error())
	case errors.Is(err, ledgers.ErrUnknownCursor):
		p = httpserver.NewProblem(http.StatusBadRequest, "unknown-cursor", "starting_after names no entry of this account")
	default:
		httpserver.WriteError(w, r, a.log, err)
		return
	}
	httpserver.WriteProblem(w, p)
}

// accountForms lists the forms of the accounts' names, role by role:
// "merchant:<merchant_id> or payer:<merchant_id>:<payer_id>".
func accountForms() string {
	var forms []string
	for _, r := range ledger.Roles() {
		forms = append(forms, r.Form())
	}
	return strings.Join(forms, " or ")
}
