package paymentstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// The published contract (SPEC §6): a CloudEvents 1.0 structured JSON
// document. These wire structs are written out field by field on purpose —
// never json.Marshal a domain type: its unexported fields would encode as {},
// and any refactoring of the entity would silently change what consumers get.
// A breaking change to a data struct bumps dataVersion.
const (
	specVersion = "1.0"
	eventSource = "/payments"
	dataVersion = "1"
	// timeLayout is RFC 3339 in UTC with milliseconds, e.g. 2026-11-29T12:00:00.123Z.
	timeLayout = "2006-01-02T15:04:05.000Z07:00"
)

type cloudEvent struct {
	SpecVersion     string `json:"specversion"`
	ID              string `json:"id"`
	Type            string `json:"type"`
	Source          string `json:"source"`
	Subject         string `json:"subject"`
	Time            string `json:"time"`
	DataContentType string `json:"datacontenttype"`
	DataVersion     string `json:"dataversion"`
	Data            any    `json:"data"`
}

// createdV1 is the data of payment.created, dataversion 1.
type createdV1 struct {
	PaymentID  string `json:"payment_id"`
	Amount     int64  `json:"amount"`
	Currency   string `json:"currency"`
	PayerID    string `json:"payer_id"`
	MerchantID string `json:"merchant_id"`
}

// refundedV1 is the data of payment.refunded, dataversion 1. It repeats the
// parties so a consumer can post the refund before it has seen the payment.
type refundedV1 struct {
	PaymentID      string `json:"payment_id"`
	RefundID       string `json:"refund_id"`
	Amount         int64  `json:"amount"` // this refund
	Currency       string `json:"currency"`
	PayerID        string `json:"payer_id"`
	MerchantID     string `json:"merchant_id"`
	RefundedAmount int64  `json:"refunded_amount"` // total after this refund
}

// encodeEvent renders e as the CloudEvents document published under message id.
func encodeEvent(id string, e payment.Event) ([]byte, error) {
	var data any
	switch ev := e.(type) {
	case payment.Created:
		data = createdV1{
			PaymentID: string(ev.PaymentID), Amount: ev.Amount.Minor(), Currency: ev.Amount.Currency(),
			PayerID: ev.PayerID, MerchantID: ev.MerchantID,
		}
	case payment.Refunded:
		data = refundedV1{
			PaymentID: string(ev.PaymentID), RefundID: string(ev.RefundID),
			Amount: ev.Amount.Minor(), Currency: ev.Amount.Currency(),
			PayerID: ev.PayerID, MerchantID: ev.MerchantID, RefundedAmount: ev.RefundedTotal.Minor(),
		}
	default:
		return nil, fmt.Errorf("encode event: no wire format for %T", e)
	}
	return json.Marshal(cloudEvent{
		SpecVersion: specVersion, ID: id, Type: e.EventType(), Source: eventSource,
		Subject: string(e.AggregateID()), Time: e.OccurredAt().UTC().Format(timeLayout),
		DataContentType: "application/json", DataVersion: dataVersion, Data: data,
	})
}

// storedOutcome is the idempotency_keys.result document: the state the first
// response was rendered from, so that a retry is answered byte for byte alike.
type storedOutcome struct {
	Payment storedPayment `json:"payment"`
	Refund  *storedRefund `json:"refund,omitempty"`
}

type storedPayment struct {
	ID          string    `json:"id"`
	Amount      int64     `json:"amount"`
	Currency    string    `json:"currency"`
	Refunded    int64     `json:"refunded_amount"`
	Status      string    `json:"status"`
	PayerID     string    `json:"payer_id"`
	MerchantID  string    `json:"merchant_id"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

type storedRefund struct {
	ID        string    `json:"id"`
	Amount    int64     `json:"amount"`
	CreatedAt time.Time `json:"created_at"`
}

func toStored(s payment.Snapshot, r *payment.Refund) storedOutcome {
	out := storedOutcome{Payment: storedPayment{
		ID: string(s.ID), Amount: s.AmountMinor, Currency: s.Currency, Refunded: s.RefundedMinor,
		Status: string(s.Status), PayerID: s.PayerID, MerchantID: s.MerchantID,
		Description: s.Description, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
	}}
	if r != nil {
		out.Refund = &storedRefund{ID: string(r.ID), Amount: r.Amount.Minor(), CreatedAt: r.CreatedAt}
	}
	return out
}

func (o storedOutcome) decode() (*payment.Payment, *payment.Refund, error) {
	sp := o.Payment
	p, err := payment.Rehydrate(payment.Snapshot{
		ID: payment.ID(sp.ID), AmountMinor: sp.Amount, Currency: sp.Currency, RefundedMinor: sp.Refunded,
		Status: payment.Status(sp.Status), PayerID: sp.PayerID, MerchantID: sp.MerchantID,
		Description: sp.Description, CreatedAt: sp.CreatedAt, UpdatedAt: sp.UpdatedAt,
	})
	if err != nil {
		return nil, nil, err
	}
	if o.Refund == nil {
		return p, nil, nil
	}
	amount, err := payment.NewMoney(o.Refund.Amount, sp.Currency)
	if err != nil {
		return nil, nil, err
	}
	return p, &payment.Refund{ID: payment.RefundID(o.Refund.ID), PaymentID: p.ID(), Amount: amount, CreatedAt: o.Refund.CreatedAt.UTC()}, nil
}
