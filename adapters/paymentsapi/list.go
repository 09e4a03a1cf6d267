package paymentsapi

import (
	"fmt"
	"net/http"
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
var listParameters = []string{"limit", "starting_after", "ending_before", "status", "created_gte", "created_lt", "merchant_id"}

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
	query, err := httpserver.ListQuery(r, listParameters...)
	if err != nil {
		return l, err
	}
	if l.Limit, err = httpserver.ListLimit(query.Get("limit"), payments.MaxListLimit); err != nil {
		return l, err
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
			return time.Time{}, httpserver.InvalidParameter(name + " must be an RFC 3339 date-time, such as 2026-11-29T12:00:00Z")
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
