package paymentsapi

import (
	"log/slog"
	"net/http"
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
	IdempotencyHeader = "Idempotency-Key"
	ReplayedHeader    = "Idempotent-Replayed"
)

type createRequest struct {
	Amount      jsontext.Value `json:"amount"`
	Currency    string         `json:"currency"`
	PayerID     string         `json:"payer_id"`
	MerchantID  string         `json:"merchant_id"`
	Description string         `json:"description"`
}

type refundRequest struct {
	Amount jsontext.Value `json:"amount"`
}

type paymentResponse struct {
	ID             string          `json:"id"`
	Status         string          `json:"status"`
	Amount         int64           `json:"amount"`
	RefundedAmount int64           `json:"refunded_amount"`
	Currency       string          `json:"currency"`
	PayerID        string          `json:"payer_id"`
	MerchantID     string          `json:"merchant_id"`
	Description    string          `json:"description"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	Refund         *refundResponse `json:"refund,omitempty"`
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
	}
	if r != nil {
		out.Refund = &refundResponse{ID: string(r.ID), Amount: r.Amount.Minor(), CreatedAt: r.CreatedAt}
	}
	return out
}

func (a *api) createPayment(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := decode(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	amount, err := parseAmount(req.Amount)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := a.svc.Create(r.Context(), payments.CreatePayment{
		Principal: principal(r), Amount: amount, Currency: req.Currency, PayerID: req.PayerID, MerchantID: req.MerchantID,
		Description: req.Description, IdempotencyKey: r.Header.Get(IdempotencyHeader),
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
	if err := decode(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	amount, err := parseAmount(req.Amount)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := a.svc.Refund(r.Context(), payments.RefundPayment{Principal: principal(r), PaymentID: id, Amount: amount, IdempotencyKey: r.Header.Get(IdempotencyHeader)})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeCommitted(w, out)
}

// writeCommitted answers 201 with what the write committed; a replay gets the
// same status and body as the first response, plus Idempotent-Replayed: true.
func writeCommitted(w http.ResponseWriter, c payments.Committed) {
	if c.Replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	httpserver.WriteJSON(w, http.StatusCreated, toResponse(c.Payment, c.Refund))
}
