package paymentmodel_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

var (
	seedFlag  = flag.Uint64("paymentmodel.seed", 0, "the seed of the first sequence; 0: a random one, printed")
	runsFlag  = flag.Int("paymentmodel.runs", 3, "how many sequences, each on new databases, seeded seed, seed+1, …")
	stepsFlag = flag.Int("paymentmodel.steps", 60, "the operations of each sequence")
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestPaymentLifecycle runs random sequences of every operation of the
// payment's state machine — each row of its table (payment.Transitions),
// with full and partial amounts, amounts over the limit, and the requests
// that refuse — plus retries with the same Idempotency-Key and the same or
// another body, another merchant's use of a key, and the expiry of
// authorizations, through the use cases and the real stores, the relay and
// the ledger. A failure names the seed that reproduces it.
func TestPaymentLifecycle(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64() >> 1
	}
	for i := range *runsFlag {
		s := seed + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) {
			w := newWorld(t, s)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the last steps of seed %d:\n  %s", s, strings.Join(w.trail[max(0, len(w.trail)-25):], "\n  "))
					t.Logf("reproduce: go test ./adapters/postgres/paymentmodel -run 'TestPaymentLifecycle' -paymentmodel.seed=%d -paymentmodel.runs=1 -paymentmodel.steps=%d -v", s, *stepsFlag)
				}
			})
			w.run(*stepsFlag)
		})
	}
}

// The merchants of a run, each with its key, and the platform's key.
var (
	merchants = []string{"mer_a", "mer_b"}
	platform  = access.PlatformPrincipal("key_platform")
)

func merchantKey(m string) access.Principal { return access.MerchantPrincipal("key_"+m, m) }

// authorizationTTL is how long an authorization is capturable in a run: an
// hour, so that the clock, which moves a minute or so a step, reaches some
// deadlines by itself and the expiry reaches others.
const authorizationTTL = time.Hour

// world is one sequence: the real stores behind the use cases, the relay
// and the ledger, and the model they are held to.
type world struct {
	t    *testing.T
	seed uint64
	rng  *rand.Rand
	ctx  context.Context

	clock  time.Time
	svc    *payments.Service
	expiry *payments.Expiry
	payDB  *pgxpool.Pool
	drain  func(context.Context) (int, error)
	// delivered counts what the publisher handed the ledger, by
	// disposition; failures are the ledger's refusals and errors.
	delivered map[inbox.Disposition]int
	failures  []string

	ledgerDB   *pgxpool.Pool
	ledger     *ledgerstore.Store
	books      *ledgers.Service
	reconciler *ledgers.Reconciler

	model *model
	step  int
	trail []string
	sent  []request // every request sent with a key, for the retries
	keyN  int
}

func newWorld(t *testing.T, seed uint64) *world {
	t.Helper()
	w := &world{
		t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), ctx: context.Background(),
		clock: time.Now().UTC().Truncate(time.Second), delivered: map[inbox.Disposition]int{},
	}
	w.model = newModel(w)
	w.payDB = pgtest.New(t, paymentsmigrations.FS)
	w.ledgerDB = pgtest.New(t, ledgermigrations.FS)
	repo := paymentstore.New(w.payDB)
	w.svc = payments.NewService(repo, w.now, func() string { return uuid.Must(uuid.NewV7()).String() },
		payments.Config{AuthorizationTTL: authorizationTTL})
	w.expiry = payments.NewExpiry(w.svc, repo.ExpiredAuthorizations, logtest.Discard(), payments.ExpiryConfig{Batch: 1 + w.rng.IntN(5)})

	w.ledger = ledgerstore.New(w.ledgerDB)
	w.books = ledgers.NewService(w.ledger)
	schemas, err := eventschema.New()
	if err != nil {
		t.Fatal(err)
	}
	proc := inbox.NewProcessor(w.ledger, ledgers.Handler{}, schemas, logtest.Discard(), nil, time.Now, inbox.ProcessorConfig{})
	ledgerInbox := inbox.NewService(w.ledger, proc, time.Now, inbox.Config{Mode: inbox.Sync})
	delivered := map[string]bool{} // message ids the ledger received
	w.drain = newDrain(t, w.payDB, 1+w.rng.IntN(8), func(ctx context.Context, msgs []outbox.Message) []error {
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			// At least once: now and then a message twice, which the
			// ledger's inbox must absorb. Each event is a fact of its
			// own, which the ledger applies the first time it gets it;
			// one it takes for a fact it already has (a second capture
			// of a payment, say) is money the payments service moved
			// and the ledger did not.
			for range 1 + w.rng.IntN(8)/7 {
				res, err := ledgerInbox.Receive(ctx, m.Payload)
				if err != nil {
					errs[i] = err
					w.failures = append(w.failures, fmt.Sprintf("%s %s: %v", m.Type, m.AggregateID, err))
					break
				}
				w.delivered[res.Disposition]++
				want := inbox.Applied
				if delivered[m.ID.String()] {
					want = inbox.Duplicate
				}
				delivered[m.ID.String()] = true
				if res.Disposition != want {
					w.failures = append(w.failures, fmt.Sprintf("%s of payment %s: the ledger's inbox answered %s, want %s", m.Type, m.AggregateID, res.Disposition, want))
				}
			}
		}
		return errs
	})
	w.reconciler = ledgers.NewReconciler(ledgerstore.NewPaymentsDB(w.payDB), w.ledger, func() time.Time { return w.clock.Add(time.Second) })
	return w
}

func (w *world) now() time.Time { return w.clock }

// fatalf fails the run, naming its seed and step.
func (w *world) fatalf(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("seed %d, step %d: %s", w.seed, w.step, fmt.Sprintf(format, args...))
}

// run makes steps random operations, checking the payments database after
// each one, draining the outbox into the ledger now and then and checking
// the ledger after each drain. Then it makes every row of the table the
// steps did not (coverTable) and a payment of every kind the database's
// rules are tried on, drains, checks the ledger, reconciles, and tries to
// break each rule of a row in the database.
func (w *world) run(steps int) {
	drivers := w.drivers()
	for _, op := range payment.Operations() {
		if _, ok := drivers[op]; !ok {
			w.fatalf("operation %q of the state machine's table has no driver in the model test: teach drivers (model_test.go) how to ask for it", op)
		}
	}
	ops := []string{"retry", "retry with another body", "another merchant's key"}
	for _, op := range payment.Operations() {
		ops = append(ops, string(op))
	}
	for w.step = 1; w.step <= steps; w.step++ {
		w.clock = w.clock.Add(time.Duration(w.rng.IntN(90)) * time.Second)
		op := ops[w.rng.IntN(len(ops))]
		var req request
		switch op {
		case "retry":
			req = w.retry(false)
		case "retry with another body":
			req = w.retry(true)
		case "another merchant's key":
			req = w.otherMerchant()
		default:
			req = drivers[payment.Operation(op)]()
		}
		if req == nil { // nothing to retry yet
			req = drivers[payment.OpCreate]()
		}
		w.send(req)
		w.checkRows()
		if w.rng.IntN(10) < 4 {
			w.drainAndCheckLedger()
		}
	}
	w.step = steps + 1
	w.coverTable()
	w.ensureSamples()
	w.drainAndCheckLedger()
	divs, err := w.reconciler.Reconcile(w.ctx, 0)
	if err != nil {
		w.fatalf("reconcile: %v", err)
	}
	if len(divs) > 0 {
		w.fatalf("reconcile finds %d divergences: %v", len(divs), divs)
	}
	w.checkInvariantsAreTheDatabases()
	if w.delivered[inbox.Applied] == 0 {
		w.fatalf("the ledger applied no event: the run proves nothing of it")
	}
}

// send sends req, checks its answer against the model's prediction, and
// makes the model follow what the prediction says changed.
func (w *world) send(req request) {
	w.t.Helper()
	p := w.model.predict(req)
	w.trail = append(w.trail, fmt.Sprintf("%d: %s → %s", w.step, req, p))
	if key, _ := req.key(); key != "" {
		w.sent = append(w.sent, req)
	}
	got, err := req.send(w)
	switch {
	case p.err != nil:
		if !errors.Is(err, p.err) {
			w.fatalf("%s: got %v, want the refusal %v", req, err, p.err)
		}
		return
	case err != nil:
		w.fatalf("%s: got %v, want %s", req, err, p)
	}
	p.check(w, req, got)
	p.apply(w.model, got)
}

// drainAndCheckLedger publishes the whole outbox to the ledger through the
// relay and then holds the ledger to the payments database.
func (w *world) drainAndCheckLedger() {
	w.t.Helper()
	if _, err := w.drain(w.ctx); err != nil {
		w.fatalf("drain the outbox: %v", err)
	}
	if len(w.failures) > 0 {
		w.fatalf("the ledger refused what the payments service published: %s", strings.Join(w.failures, "; "))
	}
	var left int
	if err := w.payDB.QueryRow(w.ctx, `SELECT count(*) FROM outbox WHERE status <> 'PUBLISHED'`).Scan(&left); err != nil {
		w.fatalf("count the outbox: %v", err)
	}
	if left > 0 {
		w.fatalf("%d outbox rows are not PUBLISHED after a drain", left)
	}
	w.checkLedger()
}

// drivers are, for each operation of the state machine, how a client (or
// the service itself, for the expiry) asks for it: a request for it on a
// payment that usually allows it and now and then on any payment, with an
// amount that makes it the operation it is — or, now and then, one that
// refuses.
func (w *world) drivers() map[payment.Operation]func() request {
	return map[payment.Operation]func() request{
		payment.OpCreate:    func() request { return w.create(payment.CaptureAutomatic) },
		payment.OpAuthorize: func() request { return w.create(payment.CaptureManual) },
		payment.OpCapture: func() request {
			p := w.target(payment.OpCapture)
			amount := int64(0) // all of it
			switch w.rng.IntN(4) {
			case 0:
				amount = p.amount
			case 1:
				amount = 1 + w.rng.Int64N(p.amount)
			case 2:
				amount = p.amount + 1 + w.rng.Int64N(10) // more than authorized
			}
			return w.change(capture{payments.CapturePayment{PaymentID: p.id, Amount: amount}}, p)
		},
		payment.OpCancel: func() request {
			p := w.target(payment.OpCancel)
			reason := []string{"", "requested_by_customer", "duplicate", "fraudulent", "abandoned"}[w.rng.IntN(5)]
			return w.change(cancel{payments.CancelPayment{PaymentID: p.id, CancellationReason: reason}}, p)
		},
		payment.OpExpire: func() request {
			// The service's own: the clock reaches an authorization's
			// deadline, or not quite, and the expiry sweeps.
			advance := time.Duration(w.rng.IntN(120)) * time.Second
			if p := w.model.earliestDeadline(); p != nil && w.rng.IntN(3) > 0 {
				advance = max(advance, p.captureBefore.Sub(w.clock)+time.Duration(w.rng.IntN(3)-1)*time.Second)
			}
			return sweep{advance: advance}
		},
		payment.OpRefundPartial: func() request {
			p := w.target(payment.OpRefundPartial)
			left := p.captured - p.refunded
			amount := 1 + w.rng.Int64N(max(1, left-1))
			if w.rng.IntN(8) == 0 {
				amount = left + 1 + w.rng.Int64N(10) // more than is left
			}
			return w.change(refund{payments.RefundPayment{PaymentID: p.id, Amount: amount}}, p)
		},
		payment.OpRefundFull: func() request {
			p := w.target(payment.OpRefundFull)
			amount := p.captured - p.refunded
			if amount <= 0 {
				amount = 1 + w.rng.Int64N(10)
			}
			return w.change(refund{payments.RefundPayment{PaymentID: p.id, Amount: amount}}, p)
		},
	}
}

// create is a request for a new payment, by a merchant or by the platform
// for it, with a key half of the time.
func (w *world) create(method payment.CaptureMethod) request {
	m := merchants[w.rng.IntN(len(merchants))]
	c := payments.CreatePayment{
		Principal: merchantKey(m), Amount: 1 + w.rng.Int64N(5000), Currency: []string{"BRL", "brl"}[w.rng.IntN(2)],
		PayerID: fmt.Sprintf("cus_%d", w.rng.IntN(3)), Description: fmt.Sprintf("order %d", w.rng.IntN(1000)),
		CaptureMethod: string(method), IdempotencyKey: w.newKey(),
	}
	if method == payment.CaptureAutomatic && w.rng.IntN(2) == 0 {
		c.CaptureMethod = "" // the default
	}
	if w.rng.IntN(4) == 0 {
		c.Principal, c.MerchantID = platform, m
	} else if w.rng.IntN(2) == 0 {
		c.MerchantID = m
	}
	return create{c}
}

// change completes a request on payment p: asked by p's merchant mostly,
// by the platform or the other merchant sometimes, with a key half of the
// time.
func (w *world) change(r changeRequest, p *modelPayment) request {
	w.t.Helper()
	who := merchantKey(p.merchant)
	switch w.rng.IntN(8) {
	case 0:
		who = platform
	case 1:
		who = merchantKey(w.otherThan(p.merchant))
	}
	return r.with(who, w.newKey())
}

var (
	_ changeRequest = refund{}
	_ changeRequest = capture{}
	_ changeRequest = cancel{}
)

func (w *world) newKey() string {
	if w.rng.IntN(2) == 0 {
		return ""
	}
	w.keyN++
	return fmt.Sprintf("key-%d", w.keyN)
}

func (w *world) otherThan(m string) string {
	for _, o := range merchants {
		if o != m {
			return o
		}
	}
	return m
}

// target picks the payment an operation is asked of: most often one whose
// status the table allows it from, otherwise any, so that refusals are
// asked for too. With no payment yet it makes one.
func (w *world) target(op payment.Operation) *modelPayment {
	if len(w.model.order) == 0 {
		w.send(w.create(payment.CaptureManual))
	}
	var allowed []*modelPayment
	for _, id := range w.model.order {
		p := w.model.payments[id]
		if _, err := payment.Step(p.status, op); err == nil {
			allowed = append(allowed, p)
		}
	}
	if len(allowed) > 0 && w.rng.IntN(4) > 0 {
		return allowed[w.rng.IntN(len(allowed))]
	}
	return w.model.payments[w.model.order[w.rng.IntN(len(w.model.order))]]
}

// retry is a request sent before with a key, again: the same one, or
// another under the same key. Nil when no request was sent with a key.
func (w *world) retry(another bool) request {
	if len(w.sent) == 0 {
		return nil
	}
	r := w.sent[w.rng.IntN(len(w.sent))]
	if another {
		return r.varied()
	}
	return r
}

// otherMerchant is a request sent before with a key, sent by the other
// merchant under the same key: a create of its own, or a change of a
// payment that is not its own.
func (w *world) otherMerchant() request {
	if len(w.sent) == 0 {
		return nil
	}
	r := w.sent[w.rng.IntN(len(w.sent))]
	_, who := r.key()
	mine := who.Merchant()
	if c, ok := r.(create); ok && who.IsPlatform() {
		mine = c.MerchantID
	} else if ch, ok := r.(changeRequest); ok && who.IsPlatform() {
		mine = w.model.payments[ch.paymentID()].merchant
	}
	return r.by(merchantKey(w.otherThan(mine)))
}

// coverTable makes every row of the state machine's table that the random
// steps did not: on a new payment brought to the row's status by the
// table's own rows, with amounts that make each operation the one it is.
// So every run takes every transition through the stores and the ledger.
func (w *world) coverTable() {
	w.t.Helper()
	for _, t := range payment.Transitions() {
		if w.model.made[t] {
			continue
		}
		var p *modelPayment
		for _, op := range pathTo(t.From) {
			p = w.makeStep(op, p)
		}
		w.makeStep(t.Op, p)
		if !w.model.made[t] {
			w.fatalf("%s from %q: made as the table says, and the model did not see the row made", t.Op, t.From)
		}
	}
}

// pathTo is the shortest sequence of operations the table allows from
// StatusNone to status s.
func pathTo(s payment.Status) []payment.Operation {
	paths := map[payment.Status][]payment.Operation{payment.StatusNone: nil}
	queue := []payment.Status{payment.StatusNone}
	for len(queue) > 0 {
		from := queue[0]
		queue = queue[1:]
		for _, t := range payment.Transitions() {
			if _, seen := paths[t.To]; t.From == from && !seen {
				paths[t.To] = append(append([]payment.Operation(nil), paths[from]...), t.Op)
				queue = append(queue, t.To)
			}
		}
	}
	return paths[s]
}

// makeStep asks for op on p (nil: a new payment) with an amount that makes
// it the operation it is, and returns p as the model has it afterwards.
func (w *world) makeStep(op payment.Operation, p *modelPayment) *modelPayment {
	w.t.Helper()
	who := merchantKey(merchants[0])
	var req request
	switch op {
	case payment.OpCreate, payment.OpAuthorize:
		method := payment.CaptureAutomatic
		if op == payment.OpAuthorize {
			method = payment.CaptureManual
		}
		req = create{payments.CreatePayment{Principal: who, Amount: 1000, Currency: "BRL", PayerID: "cus_0", CaptureMethod: string(method)}}
	case payment.OpCapture:
		// Part of it, and not what any capture took so far.
		req = capture{payments.CapturePayment{Principal: who, PaymentID: p.id, Amount: (p.amount + p.captured) / 2}}
	case payment.OpCancel:
		req = cancel{payments.CancelPayment{Principal: who, PaymentID: p.id}}
	case payment.OpExpire:
		req = sweep{advance: max(0, p.captureBefore.Sub(w.clock))}
	case payment.OpRefundPartial:
		req = refund{payments.RefundPayment{Principal: who, PaymentID: p.id, Amount: (p.captured - p.refunded) / 2}}
	case payment.OpRefundFull:
		req = refund{payments.RefundPayment{Principal: who, PaymentID: p.id, Amount: p.captured - p.refunded}}
	default:
		w.fatalf("operation %q of the state machine's table: teach makeStep (model_test.go) how to ask for it", op)
	}
	w.send(req)
	if p == nil {
		return w.model.payments[w.model.order[len(w.model.order)-1]]
	}
	return w.model.payments[p.id]
}

// ensureSamples makes sure the run holds a payment of each kind the
// database's rules are tried on: an authorization, a capture of part of
// one, a cancel, and a refund (of an automatic payment).
func (w *world) ensureSamples() {
	m := merchants[0]
	authorize := func() *modelPayment {
		c := payments.CreatePayment{Principal: merchantKey(m), Amount: 1000, Currency: "BRL", PayerID: "cus_0", CaptureMethod: "manual"}
		w.send(create{c})
		return w.model.payments[w.model.order[len(w.model.order)-1]]
	}
	authorize()
	captured := authorize()
	w.send(capture{payments.CapturePayment{Principal: merchantKey(m), PaymentID: captured.id, Amount: 400}})
	canceled := authorize()
	w.send(cancel{payments.CancelPayment{Principal: merchantKey(m), PaymentID: canceled.id}})
	w.send(create{payments.CreatePayment{Principal: merchantKey(m), Amount: 1000, Currency: "BRL", PayerID: "cus_0"}})
	refunded := w.model.payments[w.model.order[len(w.model.order)-1]]
	w.send(refund{payments.RefundPayment{Principal: merchantKey(m), PaymentID: refunded.id, Amount: 100}})
	w.checkRows()
}

// checkRows holds the payments database to the model: every payment read
// back through the store as the model has it, every row keeping every
// rule the model states, the refunds adding up, and the outbox holding
// exactly the events the model's transitions recorded, in order.
func (w *world) checkRows() {
	w.t.Helper()
	seen := 0
	for _, m := range merchants {
		page, err := w.svc.List(w.ctx, payments.ListPayments{Principal: platform, MerchantID: m, Limit: payments.MaxListLimit})
		if err != nil {
			w.fatalf("list %s's payments: %v", m, err)
		}
		for _, p := range page.Payments {
			want, ok := w.model.payments[p.ID()]
			if !ok {
				w.fatalf("the database holds payment %s, which the model never created", p.ID())
			}
			if got, exp := project(p.Snapshot()), want.projection(); got != exp {
				w.fatalf("payment %s reads back as\n  %+v\nthe model has\n  %+v", p.ID(), got, exp)
			}
			seen++
		}
	}
	if seen != len(w.model.order) {
		w.fatalf("the database lists %d payments, the model has %d", seen, len(w.model.order))
	}
	w.checkInvariantsHold()
	rows, err := w.payDB.Query(w.ctx, `SELECT aggregate_id::text, type FROM outbox ORDER BY created_at, id`)
	if err != nil {
		w.fatalf("read the outbox: %v", err)
	}
	events := map[payment.ID][]string{}
	for rows.Next() {
		var id, typ string
		if err := rows.Scan(&id, &typ); err != nil {
			w.fatalf("read the outbox: %v", err)
		}
		events[payment.ID(id)] = append(events[payment.ID(id)], typ)
	}
	if err := rows.Err(); err != nil {
		w.fatalf("read the outbox: %v", err)
	}
	for _, id := range w.model.order {
		if got, want := events[id], w.model.payments[id].events; !slices.Equal(got, want) {
			w.fatalf("the outbox holds the events %v of payment %s; the model's transitions recorded %v", got, id, want)
		}
	}
}

// projection is what the model knows of a payment, as a comparable value.
type projection struct {
	Status                                payment.Status
	Method                                payment.CaptureMethod
	Merchant, Payer, Currency             string
	Amount, Captured, Refunded            int64
	CreatedAt, UpdatedAt                  time.Time
	CaptureBefore, CapturedAt, CanceledAt time.Time
	Reason                                payment.CancellationReason
}

func project(s payment.Snapshot) projection {
	return projection{
		Status: s.Status, Method: s.CaptureMethod, Merchant: s.MerchantID, Payer: s.PayerID, Currency: s.Currency,
		Amount: s.AmountMinor, Captured: s.CapturedMinor, Refunded: s.RefundedMinor,
		CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(),
		CaptureBefore: s.CaptureBefore.UTC(), CapturedAt: s.CapturedAt.UTC(), CanceledAt: s.CanceledAt.UTC(),
		Reason: s.CancellationReason,
	}
}

// sameAnswer reports whether two answers to a write are the same: the
// payment, field by field, and the refund.
func sameAnswer(a, b payments.Committed) bool {
	if a.Payment == nil || b.Payment == nil || project(a.Payment.Snapshot()) != project(b.Payment.Snapshot()) {
		return false
	}
	if (a.Refund == nil) != (b.Refund == nil) {
		return false
	}
	return a.Refund == nil || a.Refund.ID == b.Refund.ID && a.Refund.Amount == b.Refund.Amount && a.Refund.CreatedAt.Equal(b.Refund.CreatedAt)
}
