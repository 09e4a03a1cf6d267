package paymentsapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// listResponse is the wire shape of a page of a list, as Stripe's lists
// are: the page's items in data, newest first, and has_more, whether the
// list goes on past them. A client pages on by sending the last item's id
// as starting_after.
type listResponse struct {
	Object  string            `json:"object"`
	Data    []paymentResponse `json:"data"`
	HasMore bool              `json:"has_more"`
}

// listParameters are the query parameters GET /payments reads. Any other is
// refused, as an unknown field of a body is: a misspelt filter must not
// quietly list everything.
var listParameters = map[string]bool{
	"limit": true, "starting_after": true, "ending_before": true,
	"status": true, "created_gte": true, "created_lt": true, "merchant_id": true,
}

func (a *api) listPayments(w http.ResponseWriter, r *http.Request) {
	l, err := parseList(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	l.Principal = principal(r)
	page, err := a.svc.List(r.Context(), l)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	resp := listResponse{Object: "list", Data: make([]paymentResponse, 0, len(page.Payments)), HasMore: page.HasMore}
	for _, p := range page.Payments {
		resp.Data = append(resp.Data, toResponse(p, nil))
	}
	httpserver.WriteJSON(w, http.StatusOK, resp)
}

// parseList reads the query's syntax; the use case checks its rules (the
// limit's range, one cursor at most, the merchant the key may list).
func parseList(r *http.Request) (payments.ListPayments, error) {
	var l payments.ListPayments
	query := r.URL.Query()
	for name, values := range query {
		switch {
		case !listParameters[name]:
			return l, invalidParameter(fmt.Sprintf("%s is not a parameter of this list", strconv.Quote(cut(name))))
		case len(values) != 1 || values[0] == "":
			return l, invalidParameter(name + " must be given once, with a value")
		}
	}
	if s := query.Get("limit"); s != "" {
		// 0 is the use case's "the default": a client that sends it asked
		// for an empty page, which is refused as the range refuses it.
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return l, invalidParameter(fmt.Sprintf("limit must be an integer from 1 to %d", payments.MaxListLimit))
		}
		l.Limit = n
	}
	cursor := func(name string) (payment.ID, error) {
		s := query.Get(name)
		if s == "" {
			return "", nil
		}
		id, err := payment.ParseID(s)
		if err != nil {
			// Malformed or unknown, it names no payment of the list.
			return "", fmt.Errorf("%w: %s", payments.ErrUnknownCursor, name)
		}
		return id, nil
	}
	var err error
	if l.StartingAfter, err = cursor("starting_after"); err != nil {
		return l, err
	}
	if l.EndingBefore, err = cursor("ending_before"); err != nil {
		return l, err
	}
	created := func(name string) (time.Time, error) {
		s := query.Get(name)
		if s == "" {
			return time.Time{}, nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, invalidParameter(name + " must be an RFC 3339 date-time, such as 2026-11-29T12:00:00Z")
		}
		return t, nil
	}
	if l.CreatedGTE, err = created("created_gte"); err != nil {
		return l, err
	}
	if l.CreatedLT, err = created("created_lt"); err != nil {
		return l, err
	}
	l.Status = payment.Status(query.Get("status"))
	l.MerchantID = query.Get("merchant_id")
	return l, nil
}

func invalidParameter(detail string) error {
	return &requestError{http.StatusBadRequest, "invalid-query-parameter", detail}
}

// cut shortens what the client sent for a detail: it could be long.
func cut(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
