package paymentsapi

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

type api struct {
	svc  Service
	auth Authenticator
	log  *slog.Logger
}

// IdempotencyHeader carries the client's idempotency key; ReplayedHeader marks
// a response replayed for a retry.
const (
	IdempotencyHeader = httpserver.IdempotencyHeader
	ReplayedHeader    = "Idempotent-Replayed"
)

type createRequest struct {
	Amount      jsontext.Value `json:"amount"`
	Currency    string         `json:"currency"`
	PayerID     string         `json:"payer_id"`
	MerchantID  string         `json:"merchant_id"`
	Description string         `json:"description"`
	// CaptureMethod is automatic (the default) or manual.
	CaptureMethod string `json:"capture_method"`
}

type refundRequest struct {
	Amount jsontext.Value `json:"amount"`
}

// captureRequest's amount is optional: left out, the whole authorized
// amount is captured.
type captureRequest struct {
	Amount jsontext.Value `json:"amount"`
}

// cancelRequest's reason is optional: left out, requested_by_customer.
type cancelRequest struct {
	CancellationReason string `json:"cancellation_reason"`
}

type paymentResponse struct {
	ID             string    `json:"id"`
	Status         string    `json:"status"`
	Amount         int64     `json:"amount"`
	RefundedAmount int64     `json:"refunded_amount"`
	Currency       string    `json:"currency"`
	PayerID        string    `json:"payer_id"`
	MerchantID     string    `json:"merchant_id"`
	Description    string    `json:"description"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	CaptureMethod  string    `json:"capture_method"`
	AmountCaptured int64     `json:"amount_captured"`
	// The fields of a stage, present only once the payment has reached it:
	// a manual payment's deadline and capture, a canceled one's cancel.
	CaptureBefore      *time.Time      `json:"capture_before,omitempty"`
	CapturedAt         *time.Time      `json:"captured_at,omitempty"`
	CanceledAt         *time.Time      `json:"canceled_at,omitempty"`
	CancellationReason string          `json:"cancellation_reason,omitempty"`
	Refund             *refundResponse `json:"refund,omitempty"`
}

type refundResponse struct {
	ID        string    `json:"id"`
	Amount    int64     `json:"amount"`
	CreatedAt time.Time `json:"created_at"`
}

func toResponse(p *payment.Payment, r *payment.Refund) paymentResponse {
	out := paymentResponse{
		ID: string(p.ID()), Status: string(p.Status()), Amount: p.Amount().Minor(),
		RefundedAmount: p.RefundedMinor(), Currency: p.Amount().Currency(),
		PayerID: p.PayerID(), MerchantID: p.MerchantID(), Description: p.Description(),
		CreatedAt: p.CreatedAt(), UpdatedAt: p.UpdatedAt(),
		CaptureMethod: string(p.CaptureMethod()), AmountCaptured: p.CapturedMinor(),
		CaptureBefore: timeOrNil(p.CaptureBefore()), CapturedAt: timeOrNil(p.CapturedAt()),
		CanceledAt: timeOrNil(p.CanceledAt()), CancellationReason: string(p.CancellationReason()),
	}
	if r != nil {
		out.Refund = &refundResponse{ID: string(r.ID), Amount: r.Amount.Minor(), CreatedAt: r.CreatedAt}
	}
	return out
}

func (a *api) createPayment(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := httpserver.DecodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	amount, err := parseAmount(req.Amount)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	key, err := httpserver.IdempotencyKey(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := a.svc.Create(r.Context(), payments.CreatePayment{
		Principal: principal(r), Amount: amount, Currency: req.Currency, PayerID: req.PayerID, MerchantID: req.MerchantID,
		Description: req.Description, CaptureMethod: req.CaptureMethod, IdempotencyKey: key,
	})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/payments/"+string(out.Payment.ID()))
	writeCommitted(w, out)
}

func (a *api) getPayment(w http.ResponseWriter, r *http.Request) {
	id, err := payment.ParseID(chi.URLParam(r, "id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p, err := a.svc.Get(r.Context(), principal(r), id)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	httpserver.WriteJSON(w, http.StatusOK, toResponse(p, nil))
}

func (a *api) refundPayment(w http.ResponseWriter, r *http.Request) {
	id, err := payment.ParseID(chi.URLParam(r, "id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	var req refundRequest
	if err := httpserver.DecodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	amount, err := parseAmount(req.Amount)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	key, err := httpserver.IdempotencyKey(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := a.svc.Refund(r.Context(), payments.RefundPayment{Principal: principal(r), PaymentID: id, Amount: amount, IdempotencyKey: key})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeCommitted(w, out)
}

func (a *api) capturePayment(w http.ResponseWriter, r *http.Request) {
	id, err := payment.ParseID(chi.URLParam(r, "id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	var req captureRequest
	if err := httpserver.DecodeOptionalJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	var amount int64 // zero: the whole authorized amount
	if req.Amount != nil {
		if amount, err = parseAmount(req.Amount); err == nil && amount <= 0 {
			// Given, it is a positive amount: 0 is not "all of it".
			err = &payment.ValidationError{Problems: []payment.FieldProblem{
				{Field: "amount", Detail: "must be an integer greater than zero (minor units), or left out for the whole amount"},
			}}
		}
		if err != nil {
			a.writeError(w, r, err)
			return
		}
	}
	key, err := httpserver.IdempotencyKey(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := a.svc.Capture(r.Context(), payments.CapturePayment{Principal: principal(r), PaymentID: id, Amount: amount, IdempotencyKey: key})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeChanged(w, out)
}

func (a *api) cancelPayment(w http.ResponseWriter, r *http.Request) {
	id, err := payment.ParseID(chi.URLParam(r, "id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	var req cancelRequest
	if err := httpserver.DecodeOptionalJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	key, err := httpserver.IdempotencyKey(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := a.svc.Cancel(r.Context(), payments.CancelPayment{Principal: principal(r), PaymentID: id, CancellationReason: req.CancellationReason, IdempotencyKey: key})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeChanged(w, out)
}

// writeChanged answers 200 with the payment a transition changed (it
// creates nothing); a replay gets the same, plus Idempotent-Replayed: true.
func writeChanged(w http.ResponseWriter, c payments.Committed) {
	if c.Replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	httpserver.WriteJSON(w, http.StatusOK, toResponse(c.Payment, c.Refund))
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// writeCommitted answers 201 with what the write committed; a replay gets the
// same status and body as the first response, plus Idempotent-Replayed: true.
func writeCommitted(w http.ResponseWriter, c payments.Committed) {
	if c.Replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	httpserver.WriteJSON(w, http.StatusCreated, toResponse(c.Payment, c.Refund))
}

// parseAmount reads an amount that must be a JSON integer of minor units: no
// fraction, no exponent, no string, within int64. Floats never touch money.
func parseAmount(raw jsontext.Value) (int64, error) {
	invalid := func(detail string) error {
		return &payment.ValidationError{Problems: []payment.FieldProblem{{Field: "amount", Detail: detail}}}
	}
	s := string(bytes.TrimSpace(raw))
	if s == "" || s == "null" {
		return 0, invalid("is required")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, invalid("is too large")
	}
	if err != nil {
		return 0, invalid("must be an integer number of minor units (e.g. 1050 for 10.50)")
	}
	return n, nil
}
