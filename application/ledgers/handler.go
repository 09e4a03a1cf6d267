package ledgers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	"github.com/payments-outbox/payments-outbox/domain/money"
)

// Handler is the ledger's handler of the shared inbox: it applies each
// event of a type in the registry (events.go) by its rule — a balanced
// transaction, a hold, or both — after checking the event against what the
// ledger knows of the payment. Its zero value is ready to use.
type Handler struct {
	// Metrics, when set, counts the events the ledger refuses to post.
	Metrics HandlerMetrics
	// MaxAmount is the largest amount a payment may have in the ledger,
	// in minor units: a payment.created or payment.authorized above it is
	// refused by Check. 0 means DefaultMaxAmount.
	MaxAmount int64
}

// ErrAmountLimit means an event's amount is over the ledger's limit
// (Handler.MaxAmount). The event is valid by its schema, which allows any
// int64: a limit is the deployment's policy, the ledger's own check behind
// the payments service's, against a forged or mistaken event.
var ErrAmountLimit = errors.New("amount exceeds the ledger's limit")

// DefaultMaxAmount is the ledger's limit unless Handler.MaxAmount says
// otherwise: 9,999,999,999.99 of a two-decimal currency, the payments
// service's default limit too.
const DefaultMaxAmount int64 = 999_999_999_999

func (h Handler) maxAmount() int64 {
	if h.MaxAmount <= 0 {
		return DefaultMaxAmount
	}
	return h.MaxAmount
}

// HandlerMetrics is what the handler reports. The binary exports it
// (adapters/ledgermetrics).
type HandlerMetrics interface {
	// Refused counts an event the ledger refused for good (it is parked):
	// kind is its registry kind, reason a short name of the rule it broke
	// (Reason).
	Refused(kind ledger.Kind, reason string)
}

var _ inbox.Handler[Ledger, Instruction] = Handler{}

// Instruction is one checked event: what applying it does to the ledger —
// the transfer it posts (a payment, a refund, a capture) and the hold it
// places, captures or releases.
type Instruction struct {
	postings ledger.Postings // the kind's declaration
	effect   effect
	posting  ledger.Posting
	// authorized is the hold the event says it captures or releases.
	authorized int64
	// tx is the transfer the instruction posts, when its effect posts one.
	tx ledger.Transaction
}

// Kind returns the registry kind of the event.
func (in Instruction) Kind() ledger.Kind { return in.postings.Kind }

// MessageID returns the id of the event's message.
func (in Instruction) MessageID() string { return in.posting.MessageID }

// PaymentID returns the payment the event is about.
func (in Instruction) PaymentID() string { return in.posting.PaymentID }

// Transaction returns the transfer the instruction posts; false when it
// posts none (an authorization, a cancellation).
func (in Instruction) Transaction() (ledger.Transaction, bool) { return in.tx, in.postings.Moves() }

// Types implements inbox.Handler: the registry's types, each with the data
// versions it decodes.
func (Handler) Types() map[string][]string {
	types := make(map[string][]string, len(rules))
	for typ, r := range rules {
		types[typ] = slices.Sorted(maps.Keys(r.decode))
	}
	return types
}

// Ignored implements inbox.Handler: the published types the ledger
// deliberately does not post, with the reason.
func (Handler) Ignored() map[string]string { return maps.Clone(ignored) }

// Check implements inbox.Handler: it decodes ev's data at version with its
// rule's decoder into the instruction Apply applies: the transfer it posts
// is built (and balanced) here from its kind's postings, and so is a hold,
// so that an event that could never apply is refused before anything is
// written. The envelope's subject, when present, must name the payment the
// data is about.
//
// A payment, captured at once or authorized, above MaxAmount is refused
// here (ErrAmountLimit), and counted (Metrics) at each delivery until the
// queue dead-letters it: a capture or refund is bounded by its payment, so
// the payment is the one place to check.
func (h Handler) Check(ev inbox.Event, version string) (Instruction, error) {
	r, ok := rules[ev.Type]
	if !ok {
		return Instruction{}, fmt.Errorf("the ledger does not post %s", ev.Type)
	}
	decode, ok := r.decode[version]
	if !ok {
		return Instruction{}, fmt.Errorf("the ledger does not decode %s data version %q", ev.Type, version)
	}
	d, err := decode(ev.Data)
	if err != nil {
		return Instruction{}, err
	}
	if err := checkSubject(ev.Subject, d.PaymentID); err != nil {
		return Instruction{}, err
	}
	kind := r.postings.Kind
	d.MessageID, d.Kind, d.OccurredAt = ev.ID, kind, ev.Time
	if (r.effect == effectPayment || r.effect == effectPlaceHold) && d.Amount > h.maxAmount() {
		if h.Metrics != nil {
			h.Metrics.Refused(kind, reasonAmountLimit)
		}
		return Instruction{}, fmt.Errorf("%w: %s %s of %d %s is over %d", ErrAmountLimit, kind, d.PaymentID, d.Amount, d.Currency, h.maxAmount())
	}
	if r.effect.posts() != r.postings.Moves() {
		return Instruction{}, fmt.Errorf("%w: kind %s: its effect and its postings disagree on whether it moves money", ledger.ErrInvalidTransaction, kind)
	}
	in := Instruction{postings: r.postings, effect: r.effect, posting: d.Posting, authorized: d.authorized}
	if r.postings.Moves() {
		if in.tx, err = ledger.NewTransfer(d.Posting, r.postings); err != nil {
			return Instruction{}, err
		}
		return in, nil
	}
	// A hold posts no transfer: the same checks of its parties and amount.
	if _, err := ledger.Authorize(d.PaymentID, d.Merchant, d.Currency, d.Amount, time.Unix(0, 0)); err != nil {
		return Instruction{}, err
	}
	if _, err := ledger.PayerAccount(d.Merchant, d.Payer); err != nil {
		return Instruction{}, fmt.Errorf("%w: %w", ledger.ErrInvalidTransaction, err)
	}
	if d.MessageID == "" {
		return Instruction{}, fmt.Errorf("%w: message id is required", ledger.ErrInvalidTransaction)
	}
	return in, nil
}

// checkSubject checks that the envelope's subject, when present, names the
// payment the data is about.
func checkSubject(subject, paymentID string) error {
	if subject == "" {
		return nil
	}
	if subj, err := uuid.Parse(subject); err != nil || subj.String() != paymentID {
		return fmt.Errorf("subject %q does not match payment_id %q", subject, paymentID)
	}
	return nil
}

// Compare implements inbox.Handler: the lock order of a batch's
// instructions. The database adds a transaction's postings and holds to
// their balances at commit, in the order they were written, each posting's
// merchant row before its payer's, a hold moving its merchant's row alone;
// applied by merchant, then currency, then payer (then payment), every commit — a batch's,
// or a single event's in the sync mode — takes the rows it shares with
// another in the same order, and none waits for another that waits for it.
func (Handler) Compare(a, b Instruction) int {
	pa, pb := a.posting, b.posting
	return cmp.Or(cmp.Compare(pa.Merchant, pb.Merchant), cmp.Compare(pa.Currency, pb.Currency), cmp.Compare(pa.Payer, pb.Payer),
		// Last the payment, whose row in ledger_payments an instruction
		// locks when it applies: two batches lock theirs in one order too.
		cmp.Compare(pa.PaymentID, pb.PaymentID))
}

// Apply implements inbox.Handler: it applies in in the inbox's transaction,
// at the time the inbox records the message applied. false means its fact
// was already applied under another message id.
//
// An event ahead of the fact its kind depends on (its postings' DependsOn:
// a capture before its authorization, a refund before the payment or the
// capture it gives back) waits: Apply returns ledger.ErrOutOfOrder, which
// the inbox retries, and parks only when the attempts run out, since
// delivery is unordered. Then it checks what it is told against what the
// ledger knows of the payment (ledger.Payment), locked for the
// transaction. What contradicts the ledger — a capture past the hold, a
// second capture, a refund past what was captured, an unknown currency —
// is inbox.ErrPermanent: never posted, parked at once with the reason, and
// counted (Metrics).
func (h Handler) Apply(ctx context.Context, l Ledger, in Instruction, at time.Time) (bool, error) {
	ok, err := h.apply(ctx, l, in, at)
	if reason := Reason(err); reason != "" {
		if h.Metrics != nil {
			h.Metrics.Refused(in.Kind(), reason)
		}
		return false, fmt.Errorf("%w: %s %s refused: %w", inbox.ErrPermanent, in.Kind(), in.posting.MessageID, err)
	}
	return ok, err
}

func (h Handler) apply(ctx context.Context, l Ledger, in Instruction, at time.Time) (bool, error) {
	p := in.posting
	if !money.IsCurrency(p.Currency) {
		return false, fmt.Errorf("%w: %q is no active ISO 4217 currency", ledger.ErrUnknownCurrency, p.Currency)
	}
	rec, err := readRecord(ctx, l, in)
	if err != nil {
		return false, err
	}
	if err := waitFor(ctx, l, in, rec); err != nil {
		return false, err
	}
	switch in.effect {
	case effectTransfer:
		if rec.known { // read for what it depends on: the payment is the merchant's
			if err := sameMerchant(rec.pay, p); err != nil {
				return false, err
			}
		}
		return l.Post(ctx, in.tx, at)

	case effectPayment:
		if posted, err := l.Post(ctx, in.tx, at); err != nil || !posted {
			return posted, err
		}
		pay, err := ledger.CapturedAtOnce(p.PaymentID, p.Merchant, p.Currency, p.Amount)
		if err != nil {
			return false, err
		}
		// The posting's business key let it through, so no payment.created
		// of this payment was posted before: a record of it is an
		// authorization's.
		added, err := l.AddPayment(ctx, pay, at)
		if err == nil && !added {
			err = fmt.Errorf("%w: payment %s captured at once, which the ledger holds as authorized", ledger.ErrPaymentConflict, p.PaymentID)
		}
		return err == nil, err

	case effectRefund:
		// Posted first: a refund already posted under another message id
		// is a duplicate, whatever the limit says now.
		if posted, err := l.Post(ctx, in.tx, at); err != nil || !posted {
			return posted, err
		}
		pay, err := rec.payment(in)
		if err != nil {
			return false, err
		}
		if err := sameMerchant(pay, p); err != nil {
			return false, err
		}
		if err := pay.Refund(p.Amount, p.Currency); err != nil {
			return false, err
		}
		return true, l.SavePayment(ctx, pay, at)

	case effectPlaceHold:
		pay := rec.pay
		switch {
		case rec.known && pay.Authorized() == p.Amount && pay.Currency() == p.Currency && pay.Merchant().Merchant() == p.Merchant:
			return false, nil // the same authorization under another message id
		case rec.known:
			return false, fmt.Errorf("%w: authorization of %d %s for payment %s, which the ledger holds as %d %s authorized, %d captured",
				ledger.ErrPaymentConflict, p.Amount, p.Currency, p.PaymentID, pay.Authorized(), pay.Currency(), pay.Captured())
		}
		hold, err := ledger.Authorize(p.PaymentID, p.Merchant, p.Currency, p.Amount, at)
		if err != nil {
			return false, err
		}
		return true, h.add(ctx, l, hold, at)

	case effectCapture:
		pay, err := rec.payment(in)
		if err != nil {
			return false, err
		}
		if err := sameMerchant(pay, p); err != nil {
			return false, err
		}
		if pay.Authorized() != in.authorized && pay.Authorized() != 0 {
			return false, fmt.Errorf("%w: capture of payment %s names %d authorized, the hold is %d",
				ledger.ErrPaymentConflict, p.PaymentID, in.authorized, pay.Authorized())
		}
		if err := pay.Capture(p.Amount, p.Currency, at); err != nil {
			if errors.Is(err, ledger.ErrHoldReleased) && pay.Captured() == p.Amount {
				// This capture again, under another message id: its
				// business key finds it posted.
				return l.Post(ctx, in.tx, at)
			}
			return false, err
		}
		if posted, err := l.Post(ctx, in.tx, at); err != nil || !posted {
			return posted, err
		}
		return true, l.SavePayment(ctx, pay, at)

	case effectReleaseHold:
		pay, err := rec.payment(in)
		if err != nil {
			return false, err
		}
		if err := sameMerchant(pay, p); err != nil {
			return false, err
		}
		if pay.Authorized() != 0 && in.authorized != pay.Authorized() {
			return false, fmt.Errorf("%w: cancellation of payment %s releases %d, the hold is %d",
				ledger.ErrPaymentConflict, p.PaymentID, in.authorized, pay.Authorized())
		}
		if err := pay.Release(p.Currency, at); err != nil {
			if errors.Is(err, ledger.ErrHoldReleased) && pay.Captured() == 0 {
				return false, nil // already canceled: this cancellation again
			}
			return false, err
		}
		return true, l.SavePayment(ctx, pay, at)
	}
	return false, fmt.Errorf("%w: kind %q has no effect", ledger.ErrInvalidTransaction, in.Kind())
}

// record is what the ledger knows of an instruction's payment
// (ledger.Payment), read once and locked for the transaction, for the
// effect and for the wait; known is false while it knows nothing of it.
type record struct {
	pay   ledger.Payment
	known bool
}

// readRecord reads in's payment's record when its effect checks it or a
// kind it depends on leaves its trace there, and the zero record otherwise.
func readRecord(ctx context.Context, l Ledger, in Instruction) (record, error) {
	needed := in.effect.readsRecord()
	for _, k := range in.postings.DependsOn {
		if r, ok := ruleOf(k); ok && r.effect.recorded() {
			needed = true
		}
	}
	if !needed {
		return record{}, nil
	}
	pay, err := l.Payment(ctx, in.posting.PaymentID)
	switch {
	case errors.Is(err, ledger.ErrPaymentNotFound):
		return record{}, nil
	case err != nil:
		return record{}, err
	}
	return record{pay: pay, known: true}, nil
}

// payment returns the record an effect works on. The wait saw to it that
// the fact in's kind depends on was applied, and that fact made the
// record: none means the kind's postings do not declare what it depends
// on, and the event is retried until they do.
func (rec record) payment(in Instruction) (ledger.Payment, error) {
	if !rec.known {
		return ledger.Payment{}, fmt.Errorf("%s of payment %s, of which the ledger knows nothing, and which its kind's postings let through: declare what it depends on (application/ledgers/events.go): %w",
			in.Kind(), in.posting.PaymentID, ledger.ErrPaymentNotFound)
	}
	return rec.pay, nil
}

// waitFor returns ledger.ErrOutOfOrder while in must wait for a fact its
// kind depends on (its postings' DependsOn): none of them is applied to its
// payment, and one may still come. Each is looked for where its effect
// leaves its trace: the payment's record (an authorization, a capture) or
// the postings (a refund, a plain transfer: Ledger.Posted). When the record
// rules every one of them out (a capture of a payment captured at once),
// waiting is pointless: an effect that checks the record refuses it in its
// own words, and a plain transfer is refused as a conflict.
func waitFor(ctx context.Context, l Ledger, in Instruction, rec record) error {
	deps := in.postings.DependsOn
	if len(deps) == 0 {
		return nil
	}
	p := in.posting
	mayCome := false
	for _, k := range deps {
		r, ok := ruleOf(k)
		if !ok {
			return fmt.Errorf("kind %s depends on %s, which no rule of the registry declares (application/ledgers/events.go)", in.Kind(), k)
		}
		switch r.effect.seen(rec) {
		case applied:
			return nil
		case awaited:
			mayCome = true
		case notInRecord:
			posted, err := l.Posted(ctx, p.PaymentID, k, p.FactID)
			if err != nil || posted {
				return err
			}
			mayCome = true
		}
	}
	names := make([]string, len(deps))
	for i, k := range deps {
		names[i] = string(k)
	}
	if !mayCome {
		if in.effect.readsRecord() {
			return nil
		}
		return fmt.Errorf("%w: %s of payment %s follows its %s, which the ledger's record of the payment rules out",
			ledger.ErrPaymentConflict, in.Kind(), p.PaymentID, strings.Join(names, " or "))
	}
	return fmt.Errorf("%w: %s of payment %s waits for its %s: retried until it is applied",
		ledger.ErrOutOfOrder, in.Kind(), p.PaymentID, strings.Join(names, " or "))
}

// sameMerchant refuses an event that names another merchant than the
// payment's: its transfer would move that merchant's money, and the hold it
// releases is another's.
func sameMerchant(pay ledger.Payment, p ledger.Posting) error {
	if pay.Merchant().Merchant() != p.Merchant {
		return fmt.Errorf("%w: payment %s is merchant %q's, the event names %q", ledger.ErrPaymentConflict, p.PaymentID, pay.Merchant().Merchant(), p.Merchant)
	}
	return nil
}

// add stores a payment the ledger did not know. Another transaction that
// stored it first (the same authorization under two message ids, applied
// side by side) makes this one retry, and find it.
func (h Handler) add(ctx context.Context, l Ledger, p ledger.Payment, at time.Time) error {
	added, err := l.AddPayment(ctx, p, at)
	if err != nil {
		return err
	}
	if !added {
		return fmt.Errorf("payment %s was recorded by another transaction meanwhile: retry to compare", p.ID())
	}
	return nil
}

// refusals names each refusal for the metric's reason label.
var refusals = []struct {
	err    error
	reason string
}{
	{ledger.ErrUnknownCurrency, "unknown_currency"},
	{ledger.ErrCaptureExceedsHold, "capture_exceeds_hold"},
	{ledger.ErrHoldReleased, "hold_released"},
	{ledger.ErrNoHold, "no_hold"},
	{ledger.ErrRefundExceedsCaptured, "refund_exceeds_captured"},
	{ledger.ErrCurrencyMismatch, "currency_mismatch"},
	{ledger.ErrPaymentConflict, "payment_conflict"},
	{ErrAmountLimit, reasonAmountLimit},
}

// reasonAmountLimit is ErrAmountLimit's reason: Check refuses it, not Apply.
const reasonAmountLimit = "amount_limit"

// Reason returns the short name of the rule err says an event broke
// ("capture_exceeds_hold"), or "" when err is no refusal (nil, an outage,
// an event waiting for the one ahead of it).
func Reason(err error) string {
	for _, r := range refusals {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return ""
}

// Reasons returns every reason Reason names, for the metric's labels.
func Reasons() []string {
	out := make([]string, len(refusals))
	for i, r := range refusals {
		out[i] = r.reason
	}
	return out
}
