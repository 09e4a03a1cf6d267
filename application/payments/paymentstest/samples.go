package paymentstest

import (
	"time"

	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// Sample is one published event with fixed values, and the message id it is
// published under.
type Sample struct {
	MessageID string
	Event     payment.Event
}

// Samples returns, by event type, one event of each type the payments
// service publishes. payments.EncodeEvent renders each, untraced, as the
// document of its type in docs/events, byte for byte (TestWireFormIsStable,
// which fails naming this file for a domain event type without a sample);
// the contract's tests in api check the same events against the schemas.
func Samples() map[string]Sample {
	const paymentID = payment.ID("01a229b5-9214-7c6f-9233-89c89831c3f4")
	return map[string]Sample{
		payment.TypeCreated: {"01a229b5-9214-7c86-a93e-5a5736b23efd", payment.Created{
			PaymentID: paymentID, Amount: brl(1050), PayerID: "cus_1", MerchantID: "mer_1",
			At: time.Date(2026, 11, 29, 23, 48, 14, 996_815_000, time.UTC),
		}},
		payment.TypeRefunded: {"01a229b5-9281-7136-8d1c-0a4b6e0f2c11", payment.Refunded{
			PaymentID: paymentID, RefundID: "01a229b5-9281-711f-b9f3-47d93dade72f",
			Amount: brl(300), RefundedTotal: brl(300), PayerID: "cus_1", MerchantID: "mer_1",
			At: time.Date(2026, 11, 29, 23, 48, 15, 105_074_000, time.UTC),
		}},
	}
}

func brl(minor int64) payment.Money {
	m, err := payment.NewMoney(minor, "BRL")
	if err != nil {
		panic(err) // unreachable: the samples' amounts are positive constants
	}
	return m
}
