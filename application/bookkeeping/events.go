package bookkeeping

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// The event types the ledger posts: the keys of the registry below.
const (
	TypePaymentCreated  = "payment.created"
	TypePaymentRefunded = "payment.refunded"
)

// rules is the ledger's registry: how the ledger posts each event type it
// applies. Any other type is recorded in the inbox and acknowledged without
// being applied, so that producers can ship a new type first. Adding a type
// the ledger posts is one entry here; the ledger's schema takes any kind, and
// `ledger reconcile` compares facts of every kind, reading the payments side
// from the view in which the payments service lists them (ledger_facts; a
// test requires a branch there for every kind here).
var rules = map[string]rule{
	TypePaymentCreated: {
		kind:      "payment",
		direction: ledger.PayerToMerchant,
		decode:    map[string]decoder{"1": decodeCreatedV1},
	},
	TypePaymentRefunded: {
		kind:      "refund",
		direction: ledger.MerchantToPayer,
		decode:    map[string]decoder{"1": decodeRefundedV1},
	},
}

// ignored lists the payments service's event types this ledger deliberately
// does not post, with the reason the inbox records. A test requires every
// published type to be either in rules or here, so that a new type is a
// decision, not an oversight.
var ignored = map[string]string{
	"payment.authorized": "holds are kept by the ledger's holds",
	"payment.captured":   "holds are kept by the ledger's holds",
	"payment.canceled":   "holds are kept by the ledger's holds",
}

// rule is how the ledger posts one event type.
type rule struct {
	// kind names the business fact the event posts. It is part of the
	// business key, and reconciliation compares the facts of each kind.
	kind ledger.Kind
	// direction is the posting rule: which party pays the other.
	direction ledger.Direction
	// decode holds one decoder per data version accepted. A producer that
	// bumps the version ships the new one; add its decoder beside the old.
	decode map[string]decoder
}

// decoder parses and checks one version of an event's data into the parts of
// a posting the data carries: payment id, fact id, parties, amount and
// currency. The envelope supplies the rest.
type decoder func(data []byte) (ledger.Posting, error)

// AppliedTypes returns the event types the ledger posts, sorted: the inbox
// processor claims only rows of these types, and the rest stay pending for a
// version that knows them.
func AppliedTypes() []string {
	return slices.Sorted(maps.Keys(rules))
}

// Kinds returns every kind of fact the ledger posts, so that the payments
// side of a reconciliation can be checked against it.
func Kinds() []ledger.Kind {
	var kinds []ledger.Kind
	for _, r := range rules {
		if !slices.Contains(kinds, r.kind) {
			kinds = append(kinds, r.kind)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// paymentCreatedV1 is the data of payment.created, dataversion 1.
type paymentCreatedV1 struct {
	PaymentID  string `json:"payment_id"`
	Amount     *int64 `json:"amount"`
	Currency   string `json:"currency"`
	PayerID    string `json:"payer_id"`
	MerchantID string `json:"merchant_id"`
}

func decodeCreatedV1(data []byte) (ledger.Posting, error) {
	var d paymentCreatedV1
	if err := json.Unmarshal(data, &d); err != nil {
		return ledger.Posting{}, err
	}
	paymentID, err := parseID("payment_id", d.PaymentID)
	if err != nil {
		return ledger.Posting{}, err
	}
	if d.Amount == nil {
		return ledger.Posting{}, errors.New("no amount")
	}
	return ledger.Posting{PaymentID: paymentID, Payer: d.PayerID, Merchant: d.MerchantID, Amount: *d.Amount, Currency: d.Currency}, nil
}

// paymentRefundedV1 is the data of payment.refunded, dataversion 1.
type paymentRefundedV1 struct {
	PaymentID      string `json:"payment_id"`
	RefundID       string `json:"refund_id"`
	Amount         *int64 `json:"amount"`
	Currency       string `json:"currency"`
	PayerID        string `json:"payer_id"`
	MerchantID     string `json:"merchant_id"`
	RefundedAmount *int64 `json:"refunded_amount"`
}

func decodeRefundedV1(data []byte) (ledger.Posting, error) {
	var d paymentRefundedV1
	if err := json.Unmarshal(data, &d); err != nil {
		return ledger.Posting{}, err
	}
	paymentID, err := parseID("payment_id", d.PaymentID)
	if err != nil {
		return ledger.Posting{}, err
	}
	// A payment has many refunds: the refund id tells them apart.
	refundID, err := parseID("refund_id", d.RefundID)
	if err != nil {
		return ledger.Posting{}, err
	}
	if d.Amount == nil {
		return ledger.Posting{}, errors.New("no amount")
	}
	// refunded_amount is the running total after this refund: it can never be
	// less than this refund. The ledger does not need it otherwise — each
	// refund posts its own amount, whatever order refunds arrive in.
	if d.RefundedAmount != nil && *d.RefundedAmount < *d.Amount {
		return ledger.Posting{}, fmt.Errorf("refunded_amount %d is less than amount %d", *d.RefundedAmount, *d.Amount)
	}
	return ledger.Posting{PaymentID: paymentID, FactID: refundID, Payer: d.PayerID, Merchant: d.MerchantID, Amount: *d.Amount, Currency: d.Currency}, nil
}

// parseID returns the data's field as a canonical lower-case UUID.
func parseID(field, raw string) (string, error) {
	id, err := uuid.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%s %q is not a UUID", field, raw)
	}
	return id.String(), nil
}
