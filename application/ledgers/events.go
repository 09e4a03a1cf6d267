package ledgers

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

// The kinds of fact the ledger applies, as the registry declares them.
const (
	kindPayment       ledger.Kind = "payment"
	kindRefund        ledger.Kind = "refund"
	kindAuthorization ledger.Kind = "authorization"
	kindCapture       ledger.Kind = "capture"
	kindCancellation  ledger.Kind = "cancellation"
)

// rules is the ledger's registry: how the ledger posts each event type it
// applies. Any other type is recorded in the inbox and acknowledged without
// being applied, so that producers can ship a new type first. Adding a type
// the ledger posts is one entry here; the ledger's schema takes any kind, and
// `ledger reconcile` compares facts of every kind, reading the payments side
// from the view in which the payments service lists them (ledger_facts; a
// test requires a branch there for every kind here).
//
// Each entry declares its kind's postings (ledger.Postings, the table of
// docs/LEDGER.md, "Which way each fact moves money"): the role it debits,
// the role it credits, and the kinds it depends on. Everything reads that
// declaration: Check builds the transfer from it, Apply waits for the fact
// it depends on, and reconcile derives from it the accounts each fact of the
// payments database must have moved. Its effect says what else applying it
// writes: a payment captured at once and a refund are checked against the
// payment's record; an authorization places a hold, which moves the
// merchant's pending balance and no money; a capture posts the captured
// amount and releases the whole hold, in one transaction; a cancellation
// releases it.
var rules = map[string]rule{
	TypePaymentCreated: {
		postings: ledger.Postings{Kind: kindPayment, Debit: ledger.RolePayer, Credit: ledger.RoleMerchant},
		effect:   effectPayment,
		decode:   map[string]decoder{"1": decodeCreatedV1},
	},
	TypePaymentRefunded: {
		postings: ledger.Postings{Kind: kindRefund, Debit: ledger.RoleMerchant, Credit: ledger.RolePayer,
			DependsOn: []ledger.Kind{kindPayment, kindCapture}},
		effect: effectRefund,
		decode: map[string]decoder{"1": decodeRefundedV1},
	},
	TypePaymentAuthorized: {
		postings: ledger.Postings{Kind: kindAuthorization},
		effect:   effectPlaceHold,
		decode:   map[string]decoder{"1": decodeAuthorizedV1},
	},
	TypePaymentCaptured: {
		postings: ledger.Postings{Kind: kindCapture, Debit: ledger.RolePayer, Credit: ledger.RoleMerchant,
			DependsOn: []ledger.Kind{kindAuthorization}},
		effect: effectCapture,
		decode: map[string]decoder{"1": decodeCapturedV1},
	},
	TypePaymentCanceled: {
		postings: ledger.Postings{Kind: kindCancellation, DependsOn: []ledger.Kind{kindAuthorization}},
		effect:   effectReleaseHold,
		decode:   map[string]decoder{"1": decodeCanceledV1},
	},
}

// ignored lists the payments service's event types this ledger deliberately
// does not post, with the reason the inbox records. A test requires every
// published type to be either in rules or here, so that a new type is a
// decision, not an oversight.
var ignored = map[string]string{}

// rule is how the ledger posts one event type.
type rule struct {
	// postings is the kind's declaration: its name, which is part of the
	// business key and what reconciliation compares facts by, the roles it
	// debits and credits, and the kinds it depends on. A kind is declared
	// once: a test refuses two entries of one kind.
	postings ledger.Postings
	// effect is what applying it writes besides its postings: a hold, or
	// the payment's record of what was captured and refunded.
	effect effect
	// decode holds one decoder per data version accepted. A producer that
	// bumps the version ships the new one; add its decoder beside the old.
	decode map[string]decoder
}

// ruleOf returns the rule that declares kind.
func ruleOf(kind ledger.Kind) (rule, bool) {
	for _, r := range rules {
		if r.postings.Kind == kind {
			return r, true
		}
	}
	return rule{}, false
}

// PostingsOf returns the declaration of kind: the roles it debits and
// credits, and what it depends on. false: no rule posts the kind.
func PostingsOf(kind ledger.Kind) (ledger.Postings, bool) {
	r, ok := ruleOf(kind)
	return r.postings, ok
}

// effect is what applying an event writes.
type effect int

const (
	// effectTransfer posts the kind's postings and writes nothing else: a
	// kind whose facts need no record of the payment (a fork's new kind
	// starts here, its order kept by its declaration's DependsOn).
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

// posts reports whether the effect posts a ledger transaction: whether its
// kind's declaration must move money.
func (e effect) posts() bool {
	return e == effectTransfer || e == effectPayment || e == effectRefund || e == effectCapture
}

// readsRecord reports whether applying the effect reads the payment's
// record (ledger.Payment), and refuses, in its own words, what the record
// contradicts.
func (e effect) readsRecord() bool {
	return e == effectRefund || e == effectPlaceHold || e == effectCapture || e == effectReleaseHold
}

// recorded reports whether a fact of the effect leaves its trace in the
// payment's record: the facts that start it (a payment captured at once, an
// authorization) and those that release its hold (a capture, a
// cancellation). A refund's trace is a sum, a plain transfer's none: their
// postings are their trace.
func (e effect) recorded() bool {
	return e == effectPayment || e == effectPlaceHold || e == effectCapture || e == effectReleaseHold
}

// trace is what the payment's record says of a fact the ledger waits for.
type trace int

const (
	// notInRecord: the record keeps no trace of facts of this effect
	// (recorded): the postings tell.
	notInRecord trace = iota
	// awaited: not applied, and the record leaves room for it.
	awaited
	// applied: the record shows the fact.
	applied
	// ruledOut: not applied, and never will be: the record holds another
	// fact in its place (a payment captured at once has no authorization,
	// a canceled one no capture).
	ruledOut
)

// seen says what the payment's record shows of a fact of effect e. The
// facts that start a record are a payment captured at once or an
// authorization, one or the other; the facts that release a hold are a
// capture or a cancellation, one or the other, once.
func (e effect) seen(rec record) trace {
	pay := rec.pay
	switch e {
	case effectPayment, effectPlaceHold:
		switch {
		case !rec.known:
			return awaited
		case (pay.Authorized() > 0) == (e == effectPlaceHold):
			return applied
		}
		return ruledOut
	case effectCapture, effectReleaseHold:
		switch {
		case !rec.known || pay.Authorized() > 0 && pay.ReleasedAt().IsZero():
			return awaited
		case pay.Authorized() > 0 && (pay.Captured() > 0) == (e == effectCapture):
			return applied
		}
		return ruledOut
	}
	return notInRecord
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
		if !slices.Contains(kinds, r.postings.Kind) {
			kinds = append(kinds, r.postings.Kind)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// PostedKinds returns the kinds whose facts post a ledger transaction (their
// declaration moves money), sorted: the kinds GET /payments/{id}/entries can
// answer. An authorization and a cancellation post none: they move a hold.
func PostedKinds() []ledger.Kind {
	var kinds []ledger.Kind
	for _, r := range rules {
		if r.postings.Moves() && !slices.Contains(kinds, r.postings.Kind) {
			kinds = append(kinds, r.postings.Kind)
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

// paymentCreatedV1 is the data of payment.created, data version 1.
type paymentCreatedV1 struct{ paymentData }

func decodeCreatedV1(data []byte) (decoded, error) {
	var d paymentCreatedV1
	posting, err := decodeData(data, &d, &d.paymentData)
	return decoded{Posting: posting}, err
}

// paymentRefundedV1 is the data of payment.refunded, data version 1.
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

// paymentAuthorizedV1 is the data of payment.authorized, data version 1.
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

// paymentCapturedV1 is the data of payment.captured, data version 1.
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

// paymentCanceledV1 is the data of payment.canceled, data version 1. The
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
