package ledgerstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/retention"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// event is one payment fact and the CloudEvent that announces it.
type event struct {
	id, paymentID, refundID string
	amount, total           int64
	payer, merchant         string
	at                      time.Time
	// typ is payment.authorized, payment.captured or payment.canceled; ""
	// for payment.created or payment.refunded (with a refund id).
	typ string
	// authorized is a capture's amount_authorized.
	authorized int64
}

func (e event) body() []byte {
	ts := e.at.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	const envelope = `{"specversion":"1.0","id":%q,"type":%q,"dataschema":"https://payments-outbox.example/schemas/events/%[2]s/v1.json","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","data":{"payment_id":%q,"amount":%d,"currency":"BRL","payer_id":%q,"merchant_id":%q`
	switch e.typ {
	case ledgers.TypePaymentAuthorized:
		return []byte(fmt.Sprintf(envelope+`,"capture_before":%q}}`, e.id, e.typ, e.paymentID, ts, e.paymentID, e.amount, e.payer, e.merchant,
			e.at.Add(7*24*time.Hour).UTC().Format(time.RFC3339)))
	case ledgers.TypePaymentCaptured:
		return []byte(fmt.Sprintf(envelope+`,"amount_authorized":%d,"amount_released":%d}}`, e.id, e.typ, e.paymentID, ts, e.paymentID, e.amount, e.payer, e.merchant,
			e.authorized, e.authorized-e.amount))
	case ledgers.TypePaymentCanceled:
		return []byte(fmt.Sprintf(envelope+`,"cancellation_reason":"requested_by_customer"}}`, e.id, e.typ, e.paymentID, ts, e.paymentID, e.amount, e.payer, e.merchant))
	}
	if e.refundID == "" {
		return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":%q,"amount":%d,"currency":"BRL","payer_id":%q,"merchant_id":%q}}`,
			e.id, e.paymentID, ts, e.paymentID, e.amount, e.payer, e.merchant))
	}
	return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.refunded","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.refunded/v1.json","data":{"payment_id":%q,"refund_id":%q,"amount":%d,"currency":"BRL","payer_id":%q,"merchant_id":%q,"refunded_amount":%d}}`,
		e.id, e.paymentID, ts, e.paymentID, e.refundID, e.amount, e.payer, e.merchant, e.total))
}

func newPayment(amount int64, payer, merchant string) event {
	return event{id: uuid.NewString(), paymentID: uuid.NewString(), amount: amount, payer: payer, merchant: merchant, at: time.Now().Add(-time.Hour)}
}

// authorization returns the payment.authorized of a manual payment of
// e's amount (e itself is then never sent).
func (e event) authorization() event {
	e.id, e.typ = uuid.NewString(), ledgers.TypePaymentAuthorized
	return e
}

// capture returns the payment.captured of amount of e's authorization.
func (e event) capture(amount int64) event {
	return event{id: uuid.NewString(), paymentID: e.paymentID, amount: amount, authorized: e.amount, payer: e.payer, merchant: e.merchant,
		at: e.at.Add(time.Second), typ: ledgers.TypePaymentCaptured}
}

// cancellation returns the payment.canceled of e's authorization.
func (e event) cancellation() event {
	return event{id: uuid.NewString(), paymentID: e.paymentID, amount: e.amount, payer: e.payer, merchant: e.merchant,
		at: e.at.Add(time.Second), typ: ledgers.TypePaymentCanceled}
}

func (e event) refund(amount, total int64) event {
	return event{id: uuid.NewString(), paymentID: e.paymentID, refundID: uuid.NewString(), amount: amount, total: total,
		payer: e.payer, merchant: e.merchant, at: e.at.Add(time.Second)}
}

// books is the ledger as cmd/ledger wires it on a store: the shared inbox
// with the ledger's handler, in each mode, and the ledger's queries.
type books struct {
	*ledgers.Service
	sync, async *inbox.Service[ledgers.Ledger, ledgers.Instruction]
}

// Apply receives body in the sync mode, as the consumer does.
func (b books) Apply(ctx context.Context, body []byte) (inbox.Result, error) {
	return b.sync.Receive(ctx, body)
}

// Record receives body in the async mode, as the consumer does.
func (b books) Record(ctx context.Context, body []byte) (inbox.Result, error) {
	return b.async.Receive(ctx, body)
}

func newBooks(t testing.TB, store *ledgerstore.Store) books {
	proc := newProcessor(t, store, nil, inbox.ProcessorConfig{})
	return books{Service: ledgers.NewService(store),
		sync:  inbox.NewService(store, proc, time.Now, inbox.Config{Mode: inbox.Sync}),
		async: inbox.NewService(store, proc, time.Now, inbox.Config{Mode: inbox.Async})}
}

func newService(t testing.TB) (books, *ledgerstore.Store, *pgxpool.Pool) {
	pool := pgtest.New(t, ledgermigrations.FS)
	store := ledgerstore.New(pool)
	return newBooks(t, store), store, pool
}

func balance(t *testing.T, svc books, account string) int64 {
	t.Helper()
	bs, err := svc.Balances(context.Background(), account)
	if err != nil {
		t.Fatalf("Balances(%s): %v", account, err)
	}
	if len(bs) != 1 {
		t.Fatalf("Balances(%s): got %d currencies, want 1", account, len(bs))
	}
	return bs[0].Amount()
}

func count(t *testing.T, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// inboxMessage is the inbox row a test that posts tx directly records it
// under: a transaction of the consumer always begins with its message's row.
func inboxMessage(tx ledger.Transaction) inbox.Message {
	return inbox.Message{ID: tx.MessageID(), Type: ledgers.TypePaymentCreated, Payload: []byte(`{}`), ReceivedAt: time.Now()}
}

func TestSameEventThreeTimesPostsOnce(t *testing.T) {
	t.Parallel()
	svc, _, pool := newService(t)
	p := newPayment(1050, "cus_1", "mer_1")
	var got []string
	for range 3 {
		res, err := svc.Apply(context.Background(), p.body())
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		got = append(got, res.Disposition.String())
	}
	if want := "applied,duplicate,duplicate"; strings.Join(got, ",") != want {
		t.Errorf("outcomes: got %v, want %s", got, want)
	}
	if n := count(t, pool, `SELECT count(*) FROM ledger_transactions`); n != 1 {
		t.Errorf("ledger transactions: got %d, want 1", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM inbox_messages WHERE processed_at IS NOT NULL`); n != 1 {
		t.Errorf("processed inbox rows: got %d, want 1", n)
	}
	if b := balance(t, svc, "merchant:mer_1"); b != 1050 {
		t.Errorf("merchant: got %d, want 1050", b)
	}
}

// TestRefundBeforePaymentEndsTheSame: refunds that arrive before their
// payment wait — refused with ledger.ErrOutOfOrder, nothing written, left
// for redelivery — and apply once it has; the balances end as in order.
func TestRefundBeforePaymentEndsTheSame(t *testing.T) {
	t.Parallel()
	for _, refundFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("refund first %v", refundFirst), func(t *testing.T) {
			t.Parallel()
			svc, _, _ := newService(t)
			p := newPayment(1000, "cus_r", "mer_r")
			r1, r2 := p.refund(300, 300), p.refund(700, 1000)
			order := []event{p, r1, r2}
			if refundFirst {
				order = []event{r2, r1, p}
			}
			var waiting []event
			for _, e := range order {
				res, err := svc.Apply(context.Background(), e.body())
				switch {
				case refundFirst && e.refundID != "":
					if !errors.Is(err, ledger.ErrOutOfOrder) || errors.Is(err, inbox.ErrPermanent) {
						t.Fatalf("a refund before its payment: got %v, %v; want ErrOutOfOrder, to be redelivered", res.Disposition, err)
					}
					waiting = append(waiting, e)
				case err != nil || res.Disposition != inbox.Applied:
					t.Fatalf("Apply: got %v, %v; want applied", res.Disposition, err)
				}
			}
			for _, e := range waiting {
				if res, err := svc.Apply(context.Background(), e.body()); err != nil || res.Disposition != inbox.Applied {
					t.Fatalf("the refund redelivered: got %v, %v; want applied", res.Disposition, err)
				}
			}
			if b := balance(t, svc, "payer:mer_r:cus_r"); b != 0 {
				t.Errorf("payer: got %d, want 0", b)
			}
			if b := balance(t, svc, "merchant:mer_r"); b != 0 {
				t.Errorf("merchant: got %d, want 0", b)
			}
			txs, err := svc.Entries(context.Background(), p.paymentID)
			if err != nil || len(txs) != 3 {
				t.Fatalf("Entries: got %d, %v; want 3 transactions", len(txs), err)
			}
			for _, tx := range txs {
				if !tx.Balanced() {
					t.Errorf("transaction %s is not balanced", tx.MessageID())
				}
			}
		})
	}
}

func TestBusinessKeyIsTheSecondLayer(t *testing.T) {
	t.Parallel()
	svc, _, pool := newService(t)
	p := newPayment(500, "cus_b", "mer_b")
	if _, err := svc.Apply(context.Background(), p.body()); err != nil {
		t.Fatal(err)
	}
	again := p
	again.id = uuid.NewString() // the same fact under a new message id
	res, err := svc.Apply(context.Background(), again.body())
	if err != nil || res.Disposition != inbox.Duplicate {
		t.Fatalf("got %v, %v; want duplicate", res.Disposition, err)
	}
	if n := count(t, pool, `SELECT count(*) FROM ledger_transactions`); n != 1 {
		t.Errorf("ledger transactions: got %d, want 1", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM inbox_messages WHERE id = $1 AND error LIKE '%business key%'`, again.id); n != 1 {
		t.Errorf("annotated inbox rows: got %d, want 1", n)
	}
}

func TestDatabaseRefusesUnbalancedTransactions(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, ledgermigrations.FS)
	ctx := context.Background()
	insertTx := `INSERT INTO ledger_transactions (message_id, payment_id, kind, amount, currency, occurred_at)
		VALUES (gen_random_uuid(), gen_random_uuid(), 'payment', 10, 'BRL', now()) RETURNING id`
	tests := []struct {
		name    string
		entries []int64
	}{
		{"no entries", nil},
		{"one entry", []int64{10}},
		{"does not sum to zero", []int64{-10, 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			var id int64
			if err := tx.QueryRow(ctx, insertTx).Scan(&id); err != nil {
				t.Fatal(err)
			}
			for _, a := range tt.entries {
				if _, err := tx.Exec(ctx, `INSERT INTO ledger_entries (transaction_id, account_id, amount, currency) VALUES ($1, 'merchant:a', $2, 'BRL')`, id, a); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(ctx); err == nil || !strings.Contains(err.Error(), "ledger transaction") {
				t.Errorf("commit: got %v, want the balance trigger to refuse it", err)
			}
		})
	}
	svc := newBooks(t, ledgerstore.New(pool))
	if _, err := svc.Apply(ctx, newPayment(10, "x", "y").body()); err != nil {
		t.Fatal(err)
	}
	later := []struct{ name, sql string }{
		{"changing a committed entry", `UPDATE ledger_entries SET amount = amount + 1 WHERE account_id = 'merchant:y'`},
		{"deleting a committed entry", `DELETE FROM ledger_entries WHERE account_id = 'merchant:y'`},
		{"changing a committed transaction", `UPDATE ledger_transactions SET amount = 11`},
		{"adding a balanced pair to a committed transaction", `INSERT INTO ledger_entries (transaction_id, account_id, amount, currency)
			SELECT id, a, v, 'BRL' FROM ledger_transactions, (VALUES ('payer:y:x', -5), ('merchant:z', 5)) AS e(a, v)`},
	}
	for _, tt := range later {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := pool.Exec(ctx, tt.sql); err == nil {
				t.Error("got nil, want the ledger's triggers to refuse it")
			}
		})
	}
	// The inbox processor writes in savepoints, whose rows carry a
	// subtransaction's id: the check must still tell its own rows from
	// committed ones.
	t.Run("adding a balanced pair to a committed transaction in a savepoint", func(t *testing.T) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		sp, err := tx.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sp.Exec(ctx, later[3].sql); err == nil {
			t.Error("got nil, want the ledger's triggers to refuse it")
		}
	})
}

func TestReads(t *testing.T) {
	t.Parallel()
	svc, _, _ := newService(t)
	ctx := context.Background()
	if _, err := svc.Balances(ctx, "merchant:nobody"); !errors.Is(err, ledger.ErrAccountNotFound) {
		t.Errorf("unknown account: got %v, want ErrAccountNotFound", err)
	}
	if _, err := svc.Entries(ctx, uuid.NewString()); !errors.Is(err, ledger.ErrPaymentNotFound) {
		t.Errorf("unknown payment: got %v, want ErrPaymentNotFound", err)
	}
	p := newPayment(700, "cus_m", "mer_m")
	if _, err := svc.Apply(ctx, p.body()); err != nil {
		t.Fatal(err)
	}
	txs, err := svc.Entries(ctx, p.paymentID)
	if err != nil || len(txs) != 1 {
		t.Fatalf("Entries: got %d, %v", len(txs), err)
	}
	es := txs[0].Entries()
	if len(es) != 2 || es[0].Account().String() != "payer:mer_m:cus_m" || es[0].Amount() != -700 ||
		es[1].Account().String() != "merchant:mer_m" || es[1].Amount() != 700 {
		t.Errorf("entries: got %+v, want payer:mer_m:cus_m -700, merchant:mer_m +700", es)
	}
}

func TestInboxCleanup(t *testing.T) {
	t.Parallel()
	_, store, pool := newService(t)
	ctx := context.Background()
	for i := range 5 {
		if _, err := pool.Exec(ctx, `INSERT INTO inbox_messages (id, type, payload, received_at, processed_at) VALUES ($1, 'x', '{}', now() - make_interval(days => $2), now())`,
			uuid.NewString(), 10*i); err != nil {
			t.Fatal(err)
		}
	}
	n, err := retention.Sweep(ctx, store.DeleteInboxBefore, time.Now().Add(-15*24*time.Hour), 1)
	if err != nil || n != 3 {
		t.Errorf("Sweep: got %d, %v; want 3 deleted (20, 30 and 40 days old)", n, err)
	}
	if left := count(t, pool, `SELECT count(*) FROM inbox_messages`); left != 2 {
		t.Errorf("rows left: got %d, want 2", left)
	}
}

// TestConcurrentWorkersMatchThePaymentsDatabase drives 8 concurrent workers
// over thousands of messages, a fifth of them duplicates and in shuffled
// order, straight into the handler; the ledger must then reconcile exactly
// with a payments database holding the same facts, and an injected
// divergence must be named.
func TestConcurrentWorkersMatchThePaymentsDatabase(t *testing.T) {
	t.Parallel()
	svc, store, pool := newService(t)
	payments := pgtest.New(t, paymentsmigrations.FS)
	ctx := context.Background()

	var events []event
	for i := range 1200 {
		p := newPayment(int64(100+i), fmt.Sprintf("cus_%d", i%37), fmt.Sprintf("mer_%d", i%11))
		events = append(events, p)
		insertPayment(t, payments, p)
		if i%3 == 0 {
			r := p.refund(40, 40)
			events = append(events, r)
			insertRefund(t, payments, r)
		}
	}
	unique := len(events)
	msgs := append([]event(nil), events...)
	for i := 0; i < unique/4; i++ { // 20% of the delivered messages are duplicates
		msgs = append(msgs, events[rand.IntN(unique)])
	}
	rand.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })

	var applied, dups atomic.Int64
	var next atomic.Int64
	var (
		mu      sync.Mutex
		waiting []event // refunds ahead of their payment: redelivered after
	)
	g, gctx := errgroup.WithContext(ctx)
	for range 8 {
		g.Go(func() error {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(msgs) {
					return nil
				}
				res, err := svc.Apply(gctx, msgs[i].body())
				if errors.Is(err, ledger.ErrOutOfOrder) {
					mu.Lock()
					waiting = append(waiting, msgs[i])
					mu.Unlock()
					continue
				}
				if err != nil {
					return err
				}
				switch res.Disposition {
				case inbox.Applied:
					applied.Add(1)
				case inbox.Duplicate:
					dups.Add(1)
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("worker: %v", err)
	}
	for _, e := range waiting {
		res, err := svc.Apply(ctx, e.body())
		if err != nil {
			t.Fatalf("redelivery: %v", err)
		}
		switch res.Disposition {
		case inbox.Applied:
			applied.Add(1)
		case inbox.Duplicate:
			dups.Add(1)
		}
	}
	if applied.Load() != int64(unique) || dups.Load() != int64(len(msgs)-unique) {
		t.Errorf("got %d applied and %d duplicates, want %d and %d", applied.Load(), dups.Load(), unique, len(msgs)-unique)
	}
	if n := count(t, pool, `SELECT count(*) FROM ledger_transactions`); n != unique {
		t.Errorf("ledger transactions: got %d, want %d", n, unique)
	}
	if n := count(t, pool, `SELECT count(*) FROM (SELECT currency FROM ledger_entries GROUP BY currency HAVING sum(amount) <> 0) x`); n != 0 {
		t.Errorf("currencies whose entries do not sum to zero: %d", n)
	}
	// Eight workers updated the same balance rows side by side: each is
	// still the sum of its entries.
	if n := count(t, pool, `
		SELECT count(*) FROM ledger_balances b FULL JOIN
		       (SELECT account_id, currency, sum(amount)::bigint AS total FROM ledger_entries GROUP BY account_id, currency) e
		       USING (account_id, currency)
		WHERE b.posted IS DISTINCT FROM e.total`); n != 0 {
		t.Errorf("%d balances differ from the sum of their entries", n)
	}

	rec := ledgers.NewReconciler(ledgerstore.NewPaymentsDB(payments), store, time.Now)
	divs, err := rec.Reconcile(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(divs) != 0 {
		t.Fatalf("got %d divergences (first: %s), want none", len(divs), divs[0])
	}

	victim := events[1]
	if _, err := payments.Exec(ctx, `UPDATE payments SET amount = amount + 1 WHERE id = $1`, victim.paymentID); err != nil {
		t.Fatal(err)
	}
	divs, err = rec.Reconcile(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(divs) != 1 || !strings.Contains(divs[0].String(), victim.paymentID) {
		t.Errorf("got %v, want one divergence naming payment %s", divs, victim.paymentID)
	}
}

func insertPayment(t testing.TB, pool *pgxpool.Pool, p event) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		INSERT INTO payments (id, amount, amount_captured, refunded_amount, currency, status, payer_id, merchant_id, created_at, updated_at)
		VALUES ($1, $2, $2, 0, 'BRL', 'created', $3, $4, $5, $5)`, p.paymentID, p.amount, p.payer, p.merchant, p.at)
	if err != nil {
		t.Fatalf("insert payment: %v", err)
	}
}

func insertRefund(t testing.TB, pool *pgxpool.Pool, r event) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO refunds (id, payment_id, amount, created_at) VALUES ($1, $2, $3, $4)`,
		r.refundID, r.paymentID, r.amount, r.at); err != nil {
		t.Fatalf("insert refund: %v", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE payments SET refunded_amount = refunded_amount + $2,
		status = CASE WHEN refunded_amount + $2 = amount THEN 'refunded' ELSE 'partially_refunded' END WHERE id = $1`,
		r.paymentID, r.amount); err != nil {
		t.Fatalf("update payment: %v", err)
	}
}
