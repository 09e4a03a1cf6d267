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
	const (
		paymentID    = payment.ID("01a229b5-9214-7c6f-9233-89c89831c3f4") // automatic: created, then refunded
		authorizedID = payment.ID("01a229b5-a3c0-7a3e-b1d2-4c5e6f708192") // manual: authorized, then captured in part
		canceledID   = payment.ID("01a229b5-c2e8-7f1d-8e9f-0a1b2c3d4e5f") // manual: authorized, then canceled
	)
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
		payment.TypeAuthorized: {"01a229b5-a3c0-7a51-8e0f-2b8c5d9e4f10", payment.Authorized{
			PaymentID: authorizedID, Amount: brl(2500), PayerID: "cus_1", MerchantID: "mer_1",
			CaptureBefore: time.Date(2026, 12, 6, 23, 49, 2, 331_207_000, time.UTC),
			At:            time.Date(2026, 11, 29, 23, 49, 2, 331_207_000, time.UTC),
		}},
		payment.TypeCaptured: {"01a229b5-b1f4-7d22-9c3a-6e1f0a7b8c21", payment.Captured{
			PaymentID: authorizedID, Amount: brl(2000), Authorized: brl(2500), PayerID: "cus_1", MerchantID: "mer_1",
			At: time.Date(2026, 11, 30, 10, 15, 40, 18_552_000, time.UTC),
		}},
		payment.TypeCanceled: {"01a229b5-c2e8-7f33-a4b5-7f2a1b8c9d32", payment.Canceled{
			PaymentID: canceledID, Amount: brl(4000), PayerID: "cus_2", MerchantID: "mer_1",
			Reason: payment.CancelRequestedByCustomer,
			At:     time.Date(2026, 11, 30, 11, 2, 9, 640_913_000, time.UTC),
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
