package ledgerapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// accountEntriesResponse is the wire shape of GET /accounts/{id}/entries,
// a page of a list as Stripe's lists are: the page's entries in data,
// newest first, and has_more, whether older ones follow. A client pages on
// by sending the last entry's id as starting_after.
type accountEntriesResponse struct {
	Object    string             `json:"object"`
	AccountID string             `json:"account_id"`
	Data      []accountEntryJSON `json:"data"`
	HasMore   bool               `json:"has_more"`
}

type accountEntryJSON struct {
	ID          int64           `json:"id"`
	Amount      int64           `json:"amount"`
	Currency    string          `json:"currency"`
	Transaction transactionJSON `json:"transaction"`
}

// accountEntries answers GET /accounts/{id}/entries; id is read as the
// balance route reads it.
func (a *api) accountEntries(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if r.URL.RawPath != "" {
		if u, err := url.PathUnescape(id); err == nil {
			id = u
		}
	}
	l, err := parseEntriesQuery(r)
	if err != nil {
		httpserver.WriteProblem(w, httpserver.NewProblem(http.StatusBadRequest, "invalid-query-parameter", err.Error()))
		return
	}
	l.Account = id
	page, err := a.q.AccountEntries(r.Context(), l)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	resp := accountEntriesResponse{Object: "list", AccountID: page.Account.String(), Data: make([]accountEntryJSON, 0, len(page.Entries)), HasMore: page.HasMore}
	for _, e := range page.Entries {
		resp.Data = append(resp.Data, accountEntryJSON{ID: e.ID, Amount: e.Entry.Amount(), Currency: e.Entry.Currency(), Transaction: toTransactionJSON(e.Transaction)})
	}
	httpserver.WriteJSON(w, http.StatusOK, resp)
}

// parseEntriesQuery reads the query's syntax; the use case checks the
// limit's range. Any parameter but limit and starting_after is refused, so
// a misspelt one is not quietly ignored.
func parseEntriesQuery(r *http.Request) (ledgers.ListEntries, error) {
	var l ledgers.ListEntries
	query := r.URL.Query()
	for name, values := range query {
		switch {
		case name != "limit" && name != "starting_after":
			return l, fmt.Errorf("%s is not a parameter of this list", strconv.Quote(cut(name)))
		case len(values) != 1 || values[0] == "":
			return l, fmt.Errorf("%s must be given once, with a value", name)
		}
	}
	if s := query.Get("limit"); s != "" {
		// 0 is the use case's "the default": a client that sends it asked
		// for an empty page.
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return l, fmt.Errorf("limit must be an integer from 1 to %d", ledgers.MaxListLimit)
		}
		l.Limit = n
	}
	if s := query.Get("starting_after"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return l, fmt.Errorf("starting_after must be an entry's id, a positive integer")
		}
		l.StartingAfter = n
	}
	return l, nil
}

// toTransactionJSON is a ledger transaction as both entries routes show it.
func toTransactionJSON(tx ledger.Transaction) transactionJSON {
	tj := transactionJSON{
		MessageID: tx.MessageID(), Kind: string(tx.Kind()), FactID: tx.FactID(),
		Amount: tx.Amount(), Currency: tx.Currency(), OccurredAt: tx.OccurredAt().UTC(),
	}
	for _, e := range tx.Entries() {
		tj.Entries = append(tj.Entries, entryJSON{AccountID: e.Account().String(), Amount: e.Amount(), Currency: e.Currency()})
	}
	return tj
}

// cut shortens what the client sent for a detail: it could be long.
func cut(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
