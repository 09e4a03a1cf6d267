package paymentmodel_test

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// model is what the service should hold after the calls so far, worked out
// on its own: each payment's status from the state machine's table
// (payment.Step), its amounts by the money rules, and the keys the service
// stores, with the answer each replays.
type model struct {
	w        *world
	payments map[payment.ID]*modelPayment
	order    []payment.ID
	keys     map[string]storedKey // by scope and key
	made     map[payment.Transition]bool
}

func newModel(w *world) *model {
	return &model{w: w, payments: map[payment.ID]*modelPayment{}, keys: map[string]storedKey{}, made: map[payment.Transition]bool{}}
}

// modelPayment is a payment as the model has it. Its amounts always keep
// 0 ≤ refunded ≤ captured ≤ amount: the model checks that it does, so a
// rule of the table that broke them fails whatever the service answers.
type modelPayment struct {
	id                                                          payment.ID
	merchant, payer                                             string
	method                                                      payment.CaptureMethod
	amount, captured, refunded                                  int64
	status                                                      payment.Status
	createdAt, updatedAt, captureBefore, capturedAt, canceledAt time.Time
	reason                                                      payment.CancellationReason
	events                                                      []string // the types of the events it recorded, in order
}

func (p *modelPayment) projection() projection {
	return projection{
		Status: p.status, Method: p.method, Merchant: p.merchant, Payer: p.payer, Currency: "BRL",
		Amount: p.amount, Captured: p.captured, Refunded: p.refunded,
		CreatedAt: p.createdAt, UpdatedAt: p.updatedAt,
		CaptureBefore: p.captureBefore, CapturedAt: p.capturedAt, CanceledAt: p.canceledAt, Reason: p.reason,
	}
}

// storedKey is a key the service stored: the request it came with, and the
// answer every retry of that request gets.
type storedKey struct {
	req    request
	answer payments.Committed
}

// earliestDeadline is the authorization whose capture_before comes first,
// nil when none is authorized.
func (m *model) earliestDeadline() *modelPayment {
	var first *modelPayment
	for _, id := range m.order {
		p := m.payments[id]
		if _, err := payment.Step(p.status, payment.OpExpire); err == nil && (first == nil || p.captureBefore.Before(first.captureBefore)) {
			first = p
		}
	}
	return first
}

// prediction is what the model expects of one request: a refusal, a replay
// of a stored answer, or a change — the payment it makes or changes, as it
// will be — and, for a sweep, the authorizations it cancels.
type prediction struct {
	desc   string
	err    error
	replay *payments.Committed
	after  *modelPayment   // the payment as the change leaves it (a copy)
	refund int64           // the refund's amount, for a refund
	swept  []*modelPayment // a sweep's cancels, as they leave the payments
	store  string          // the key the change stores, "" for none
	req    request
	made   []payment.Transition // the rows of the table the change makes
}

func (p prediction) String() string { return p.desc }

func refused(err error, why string, args ...any) prediction {
	return prediction{err: err, desc: "refused: " + fmt.Sprintf(why, args...)}
}

// predict works out what req should do from the model alone.
func (m *model) predict(req request) prediction {
	now := m.w.clock
	if s, ok := req.(sweep); ok {
		now = now.Add(s.advance)
		var out []*modelPayment
		var made []payment.Transition
		for _, id := range m.order {
			p := m.payments[id]
			t, err := payment.Step(p.status, payment.OpExpire)
			if err != nil || now.Before(p.captureBefore) {
				continue
			}
			q := *p
			q.status, q.reason, q.canceledAt, q.updatedAt = t.To, payment.CancelExpired, now, now
			q.events = append(append([]string(nil), p.events...), t.Event)
			out = append(out, &q)
			made = append(made, t)
		}
		return prediction{desc: fmt.Sprintf("cancels %d expired authorization(s)", len(out)), swept: out, made: made}
	}

	key, who := req.key()
	var p *modelPayment
	scope := who.Merchant()
	if c, ok := req.(create); ok {
		if who.IsPlatform() {
			scope = c.MerchantID
		}
	} else {
		p = m.payments[req.(changeRequest).paymentID()]
		if who.IsPlatform() {
			scope = p.merchant
		}
	}
	store := ""
	if key != "" {
		store = scope + "\x1f" + key
		if k, ok := m.keys[store]; ok {
			if !sameRequest(k.req, req) {
				return refused(idempotency.ErrKeyReused, "key %q was stored with %s", key, k.req)
			}
			return prediction{desc: "the replay of the first answer to " + k.req.String(), replay: &k.answer}
		}
	}
	if p != nil && !who.ActsFor(p.merchant) {
		return refused(payment.ErrNotFound, "%s is %s's payment", p.id, p.merchant)
	}
	next := prediction{store: store, req: req}

	switch r := req.(type) {
	case create:
		op := payment.OpCreate
		if r.CaptureMethod == string(payment.CaptureManual) {
			op = payment.OpAuthorize
		}
		t, err := payment.Step(payment.StatusNone, op)
		if err != nil {
			return refused(err, "the table has no %s", op)
		}
		q := &modelPayment{
			merchant: scope, payer: r.PayerID, method: payment.CaptureAutomatic, amount: r.Amount,
			status: t.To, createdAt: now, updatedAt: now, events: []string{t.Event},
		}
		if op == payment.OpCreate {
			q.captured = r.Amount
		} else {
			q.method, q.captureBefore = payment.CaptureManual, now.Add(authorizationTTL)
		}
		next.after, next.desc, next.made = q, fmt.Sprintf("%s, a new %s payment", t.To, q.method), []payment.Transition{t}

	case capture:
		t, err := payment.Step(p.status, payment.OpCapture)
		amount := r.Amount
		if amount == 0 {
			amount = p.amount
		}
		switch {
		case err != nil:
			return refused(err, "capture of a payment %s", p.status)
		case !now.Before(p.captureBefore):
			return refused(payment.ErrAuthorizationExpired, "captured at %s, due before %s", now, p.captureBefore)
		case amount > p.amount:
			return refused(payment.ErrCaptureExceedsAmount, "%d of %d", amount, p.amount)
		}
		q := p.next(t, now)
		q.captured, q.capturedAt = amount, now
		next.after, next.desc, next.made = q, fmt.Sprintf("%s, %d of %d", t.To, amount, p.amount), []payment.Transition{t}

	case cancel:
		t, err := payment.Step(p.status, payment.OpCancel)
		if err != nil {
			return refused(err, "cancel of a payment %s", p.status)
		}
		q := p.next(t, now)
		q.reason, q.canceledAt = payment.CancellationReason(r.CancellationReason), now
		if q.reason == "" {
			q.reason = payment.CancelRequestedByCustomer
		}
		next.after, next.desc, next.made = q, fmt.Sprintf("%s for %s", t.To, q.reason), []payment.Transition{t}

	case refund:
		left := p.captured - p.refunded
		op := payment.OpRefundPartial
		if r.Amount == left {
			op = payment.OpRefundFull
		}
		t, err := payment.Step(p.status, op)
		switch {
		case err != nil:
			return refused(err, "%s of a payment %s", op, p.status)
		case r.Amount > left:
			return refused(payment.ErrRefundExceedsAmount, "%d of %d left", r.Amount, left)
		}
		q := p.next(t, now)
		q.refunded += r.Amount
		next.after, next.refund, next.desc = q, r.Amount, fmt.Sprintf("%s, %d of %d refunded", t.To, q.refunded, q.captured)
		next.made = []payment.Transition{t}

	default:
		m.w.fatalf("the model does not know the request %T", req)
	}
	if a := next.after; a.refunded < 0 || a.refunded > a.captured || a.captured > a.amount || a.amount <= 0 {
		m.w.fatalf("the model's own %s breaks 0 ≤ refunded ≤ captured ≤ amount: %+v (a row of the table moves money it should not)", req, *a)
	}
	return next
}

// next is a copy of p after transition t at now.
func (p *modelPayment) next(t payment.Transition, now time.Time) *modelPayment {
	q := *p
	q.status, q.updatedAt = t.To, now
	q.events = append(append([]string(nil), p.events...), t.Event)
	return &q
}

// check holds the answer got to the prediction.
func (p prediction) check(w *world, req request, got answer) {
	w.t.Helper()
	switch {
	case p.replay != nil:
		if !got.committed.Replayed || !sameAnswer(got.committed, *p.replay) {
			w.fatalf("%s: got replayed=%v %+v, want the first answer replayed: %+v", req, got.committed.Replayed, snapshot(got.committed), snapshot(*p.replay))
		}
		return
	case p.swept != nil || isSweep(req):
		if got.swept != len(p.swept) {
			w.fatalf("%s: the expiry canceled %d authorizations, the model %d", req, got.swept, len(p.swept))
		}
		return
	}
	c := got.committed
	if c.Replayed || c.Payment == nil {
		w.fatalf("%s: got replayed=%v payment %v, want a new change", req, c.Replayed, c.Payment)
	}
	want := *p.after
	if want.id == "" {
		want.id = c.Payment.ID()
	}
	if gotP := project(c.Payment.Snapshot()); gotP != want.projection() {
		w.fatalf("%s: the answer is\n  %+v\nthe model has\n  %+v", req, gotP, want.projection())
	}
	if (c.Refund != nil) != (p.refund != 0) || c.Refund != nil && (c.Refund.Amount.Minor() != p.refund || c.Refund.PaymentID != want.id || !c.Refund.CreatedAt.Equal(w.clock)) {
		w.fatalf("%s: the answer's refund is %+v, want %d of %s at %s", req, c.Refund, p.refund, want.id, w.clock)
	}
}

// apply makes the model follow a change that happened as predicted.
func (p prediction) apply(m *model, got answer) {
	if p.replay != nil {
		return
	}
	for _, t := range p.made {
		m.made[t] = true
	}
	for _, q := range p.swept {
		m.payments[q.id] = q
	}
	if p.after == nil {
		return
	}
	q := *p.after
	if q.id == "" {
		q.id = got.committed.Payment.ID()
		m.order = append(m.order, q.id)
	}
	m.payments[q.id] = &q
	if p.store != "" {
		m.keys[p.store] = storedKey{req: p.req, answer: got.committed}
	}
}

func isSweep(r request) bool { _, ok := r.(sweep); return ok }

// sameRequest reports whether b asks for what a asked, as the service
// tells a retry from another request: the same use case and the same
// fields, who sends it and the key aside, a create's defaults filled in
// (its merchant, its capture method) and its currency's case dropped.
func sameRequest(a, b request) bool {
	na, nb := normal(a), normal(b)
	return reflect.TypeOf(na) == reflect.TypeOf(nb) && reflect.DeepEqual(na, nb)
}

func normal(r request) any {
	switch r := r.(type) {
	case create:
		c := r.CreatePayment
		if !c.Principal.IsPlatform() && c.MerchantID == "" {
			c.MerchantID = c.Principal.Merchant()
		}
		if c.CaptureMethod == "" {
			c.CaptureMethod = string(payment.CaptureAutomatic)
		}
		c.Currency = strings.ToUpper(c.Currency)
		c.Principal, c.IdempotencyKey = access.Principal{}, ""
		return c
	case refund:
		c := r.RefundPayment
		c.Principal, c.IdempotencyKey = access.Principal{}, ""
		return c
	case capture:
		c := r.CapturePayment
		c.Principal, c.IdempotencyKey = access.Principal{}, ""
		return c
	case cancel:
		c := r.CancelPayment
		c.Principal, c.IdempotencyKey = access.Principal{}, ""
		return c
	}
	return r
}

func snapshot(c payments.Committed) any {
	if c.Payment == nil {
		return nil
	}
	return project(c.Payment.Snapshot())
}
