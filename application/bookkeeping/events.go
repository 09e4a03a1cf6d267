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

// The event types the ledger applies: the keys of the registry below.
const (
	TypePaymentCreated    = "payment.created"
	TypePaymentRefunded   = "payment.refunded"
	TypePaymentAuthorized = "payment.authorized"
	TypePaymentCaptured   = "payment.captured"
	TypePaymentCanceled   = "payment.canceled"
)

// rules is the ledger's registry: how the ledger posts each event type it
// applies. Any other type is recorded in the inbox and acknowledged without
// being applied, so that producers can ship a new type first. Adding a type
// the ledger posts is one entry here; the ledger's schema takes any kind, and
// `ledger reconcile` compares facts of every kind, reading the payments side
// from the view in which the payments service lists them (ledger_facts; a
// test requires a branch there for every kind here).
//
// Each entry's effect says what applying it does (docs/LEDGER.md, "Which
// way each fact moves money"): a payment captured at once and a refund post
// a transfer; an authorization places a hold, which moves the merchant's
// pending balance and no money; a capture posts the captured amount and
// releases the whole hold, in one transaction; a cancellation releases it.
var rules = map[string]rule{
	TypePaymentCreated: {
		kind:      "payment",
		effect:    effectPayment,
		direction: ledger.PayerToMerchant,
		decode:    map[string]decoder{"1": decodeCreatedV1},
	},
	TypePaymentRefunded: {
		kind:      "refund",
		effect:    effectRefund,
		direction: ledger.MerchantToPayer,
		decode:    map[string]decoder{"1": decodeRefundedV1},
	},
	TypePaymentAuthorized: {
		kind:   "authorization",
		effect: effectPlaceHold,
		decode: map[string]decoder{"1": decodeAuthorizedV1},
	},
	TypePaymentCaptured: {
		kind:      "capture",
		effect:    effectCapture,
		direction: ledger.PayerToMerchant,
		decode:    map[string]decoder{"1": decodeCapturedV1},
	},
	TypePaymentCanceled: {
		kind:   "cancellation",
		effect: effectReleaseHold,
		decode: map[string]decoder{"1": decodeCanceledV1},
	},
}

// ignored lists the payments service's event types this ledger deliberately
// does not post, with the reason the inbox records. A test requires every
// published type to be either in rules or here, so that a new type is a
// decision, not an oversight.
var ignored = map[string]string{}

// rule is how the ledger posts one event type.
type rule struct {
	// kind names the business fact the event posts. It is part of the
	// business key, and reconciliation compares the facts of each kind.
	kind ledger.Kind
	// effect is what applying it writes: a transfer, a hold, or both.
	effect effect
	// direction is the posting rule of the transfer, when the effect posts
	// one: which party pays the other.
	direction ledger.Direction
	// decode holds one decoder per data version accepted. A producer that
	// bumps the version ships the new one; add its decoder beside the old.
	decode map[string]decoder
}

// effect is what applying an event writes.
type effect int

const (
	// effectTransfer posts a transfer and checks nothing of the payment: a
	// kind whose facts need no other (a fork's new kind starts here).
	effectTransfer effect = iota + 1
	// effectPayment posts a payment captured at once and records what it
	// captured, the limit of its refunds.
	effectPayment
	// effectRefund posts a refund, within what the payment captured.
	effectRefund
	// effectPlaceHold places the authorization's hold: the merchant's
	// pending balance rises; nothing is posted.
	effectPlaceHold
	// effectCapture posts the captured amount and releases the whole hold,
	// in one transaction.
	effectCapture
	// effectReleaseHold releases the hold: a cancellation.
	effectReleaseHold
)

// posts reports whether the effect posts a ledger transaction.
func (e effect) posts() bool {
	return e == effectTransfer || e == effectPayment || e == effectRefund || e == effectCapture
}

// decoder parses and checks one version of an event's data into the parts of
// a posting the data carries: payment id, fact id, parties, amount and
// currency, and for a capture the authorized amount it names. The envelope
// supplies the rest.
type decoder func(data []byte) (decoded, error)

// decoded is what a decoder reads from an event's data.
type decoded struct {
	ledger.Posting
	// authorized is a capture's amount_authorized: the hold it captures.
	authorized int64
}

// AppliedTypes returns the event types the ledger posts, sorted: the inbox
// processor claims only rows of these types, and the rest stay pending for a
// version that knows them.
func AppliedTypes() []string {
	return slices.Sorted(maps.Keys(rules))
}

// Kinds returns every kind of fact the ledger applies, the holds' included,
// so that the payments side of a reconciliation can be checked against it:
// a hold placed is an authorization fact, and one released without a
// capture a cancellation fact, as a posted transaction is a fact of its
// kind.
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

// PostedKinds returns the kinds whose facts post a ledger transaction, sorted:
// the kinds GET /payments/{id}/entries can answer. An authorization and a
// cancellation post none: they move a hold.
func PostedKinds() []ledger.Kind {
	var kinds []ledger.Kind
	for _, r := range rules {
		if r.effect.posts() && !slices.Contains(kinds, r.kind) {
			kinds = append(kinds, r.kind)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// paymentData is what every payment event's data carries, each version of
// each type embedding it: the payment and its parties, an amount and its
// currency.
type paymentData struct {
	PaymentID  string `json:"payment_id"`
	Amount     *int64 `json:"amount"`
	Currency   string `json:"currency"`
	PayerID    string `json:"payer_id"`
	MerchantID string `json:"merchant_id"`
}

// posting checks the common part and returns it as a posting.
func (d paymentData) posting() (ledger.Posting, error) {
	paymentID, err := parseID("payment_id", d.PaymentID)
	if err != nil {
		return ledger.Posting{}, err
	}
	if d.Amount == nil {
		return ledger.Posting{}, errors.New("no amount")
	}
	return ledger.Posting{PaymentID: paymentID, Payer: d.PayerID, Merchant: d.MerchantID, Amount: *d.Amount, Currency: d.Currency}, nil
}

// decodeData parses data into d, whose common part is common, and returns
// that part checked, as a posting.
func decodeData(data []byte, d any, common *paymentData) (ledger.Posting, error) {
	if err := json.Unmarshal(data, d); err != nil {
		return ledger.Posting{}, err
	}
	return common.posting()
}

// paymentCreatedV1 is the data of payment.created, dataversion 1.
type paymentCreatedV1 struct{ paymentData }

func decodeCreatedV1(data []byte) (decoded, error) {
	var d paymentCreatedV1
	posting, err := decodeData(data, &d, &d.paymentData)
	return decoded{Posting: posting}, err
}

// paymentRefundedV1 is the data of payment.refunded, dataversion 1.
type paymentRefundedV1 struct {
	paymentData
	RefundID       string `json:"refund_id"`
	RefundedAmount *int64 `json:"refunded_amount"`
}

func decodeRefundedV1(data []byte) (decoded, error) {
	var d paymentRefundedV1
	posting, err := decodeData(data, &d, &d.paymentData)
	if err != nil {
		return decoded{}, err
	}
	// A payment has many refunds: the refund id tells them apart.
	if posting.FactID, err = parseID("refund_id", d.RefundID); err != nil {
		return decoded{}, err
	}
	// refunded_amount is the running total after this refund: it can never be
	// less than this refund. The ledger does not need it otherwise — each
	// refund posts its own amount, whatever order refunds arrive in.
	if d.RefundedAmount != nil && *d.RefundedAmount < posting.Amount {
		return decoded{}, fmt.Errorf("refunded_amount %d is less than amount %d", *d.RefundedAmount, posting.Amount)
	}
	return decoded{Posting: posting}, nil
}

// paymentAuthorizedV1 is the data of payment.authorized, dataversion 1.
// capture_before is the payments service's business: when it passes, the
// payments service cancels the payment through its outbox, and the ledger
// releases the hold on that payment.canceled.
type paymentAuthorizedV1 struct {
	paymentData
	CaptureBefore string `json:"capture_before"`
}

func decodeAuthorizedV1(data []byte) (decoded, error) {
	var d paymentAuthorizedV1
	posting, err := decodeData(data, &d, &d.paymentData)
	return decoded{Posting: posting}, err
}

// paymentCapturedV1 is the data of payment.captured, dataversion 1.
type paymentCapturedV1 struct {
	paymentData
	AmountAuthorized *int64 `json:"amount_authorized"`
	AmountReleased   *int64 `json:"amount_released"`
}

func decodeCapturedV1(data []byte) (decoded, error) {
	var d paymentCapturedV1
	posting, err := decodeData(data, &d, &d.paymentData)
	if err != nil {
		return decoded{}, err
	}
	if d.AmountAuthorized == nil || d.AmountReleased == nil {
		return decoded{}, errors.New("amount, amount_authorized and amount_released are required")
	}
	// The event's own arithmetic: what it captured and what it released
	// make up what was authorized. Whether that is the hold the ledger
	// placed is Apply's question.
	if posting.Amount > *d.AmountAuthorized || *d.AmountReleased != *d.AmountAuthorized-posting.Amount {
		return decoded{}, fmt.Errorf("amount %d and amount_released %d do not make amount_authorized %d", posting.Amount, *d.AmountReleased, *d.AmountAuthorized)
	}
	return decoded{Posting: posting, authorized: *d.AmountAuthorized}, nil
}

// paymentCanceledV1 is the data of payment.canceled, dataversion 1. The
// reason is the payments service's; the ledger releases the hold whatever
// it is.
type paymentCanceledV1 struct {
	paymentData
	CancellationReason string `json:"cancellation_reason"`
}

func decodeCanceledV1(data []byte) (decoded, error) {
	var d paymentCanceledV1
	posting, err := decodeData(data, &d, &d.paymentData)
	if err != nil {
		return decoded{}, err
	}
	// amount is the hold released: the authorized amount.
	return decoded{Posting: posting, authorized: posting.Amount}, nil
}

// parseID returns the data's field as a canonical lower-case UUID.
func parseID(field, raw string) (string, error) {
	id, err := uuid.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%s %q is not a UUID", field, raw)
	}
	return id.String(), nil
}
