package ledgerstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// TestTwoInt64MaxPaymentsInBothModes: the first payment of
// 9223372036854775807 posts; the second would take the merchant's balance
// past int64, so the database refuses it, and the ledger parks the message
// with its reason instead of retrying it forever — at once, in either inbox
// mode — while the balance still reads, with the first payment's amount.
func TestTwoInt64MaxPaymentsInBothModes(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			svc, store, pool := newService(t)
			ctx := context.Background()
			first, second := newPayment(math.MaxInt64, "cus_1", "mer_max"), newPayment(math.MaxInt64, "cus_2", "mer_max")
			if mode == "sync" {
				if res, err := svc.Apply(ctx, first.body()); err != nil || res.Disposition != inbox.Applied {
					t.Fatalf("first: got %v, %v; want applied", res.Disposition, err)
				}
				res, err := svc.Apply(ctx, second.body())
				if err != nil || res.Disposition != inbox.Parked {
					t.Fatalf("second: got %v, %v; want parked, and no error: the consumer acknowledges it", res.Disposition, err)
				}
			} else {
				record(t, svc, first.body(), second.body())
				drain(t, newProcessor(t, store, nil, inbox.ProcessorConfig{MaxAttempts: 10}))
			}
			if r := row(t, pool, first.id); !r.processed || r.park {
				t.Errorf("first: inbox row %+v, want processed", r)
			}
			r := row(t, pool, second.id)
			if !r.park || r.processed || r.attempts != 1 || !strings.Contains(r.errText, ledger.ErrBalanceLimit.Error()) ||
				!strings.Contains(r.errText, "merchant:mer_max") {
				t.Errorf("second: inbox row %+v, want parked after one attempt, the reason naming the balance limit and the account", r)
			}
			if b := balance(t, svc, "merchant:mer_max"); b != math.MaxInt64 {
				t.Errorf("merchant: got %d, want %d", b, int64(math.MaxInt64))
			}
			if _, err := svc.Balances(ctx, "payer:mer_max:cus_2"); !errors.Is(err, ledger.ErrAccountNotFound) {
				t.Errorf("the second payer: got %v, want ErrAccountNotFound: nothing of the refused posting stays", err)
			}
			if n := count(t, pool, `SELECT count(*) FROM ledger_transactions`); n != 1 {
				t.Errorf("ledger transactions: got %d, want 1", n)
			}
			if st, err := store.InboxStats(ctx, ledgers.AppliedTypes()); err != nil || st.Parked != 1 || st.Pending != 0 {
				t.Errorf("inbox stats: got %+v, %v; want one parked row (inbox_parked_rows, the InboxParkedRows alert)", st, err)
			}
		})
	}
}

// TestBalancesAreKeptByTheDatabase: ledger_balances is written by the
// postings' trigger only, and account names keep the chart's form whatever
// code writes them.
func TestBalancesAreKeptByTheDatabase(t *testing.T) {
	t.Parallel()
	svc, _, pool := newService(t)
	ctx := context.Background()
	if _, err := svc.Apply(ctx, newPayment(10, "cus_1", "mer_1").body()); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`INSERT INTO ledger_balances (account_id, currency, posted) VALUES ('merchant:mer_2', 'BRL', 1000)`,
		`UPDATE ledger_balances SET posted = posted + 1000`,
		`INSERT INTO ledger_balances (account_id, currency, posted) VALUES ('merchant:mer_1', 'BRL', 1000)
		 ON CONFLICT (account_id, currency) DO UPDATE SET posted = 1000`,
		`DELETE FROM ledger_balances`,
		`TRUNCATE ledger_balances`,
	} {
		if _, err := pool.Exec(ctx, sql); err == nil || !strings.Contains(err.Error(), "kept by the postings") {
			t.Errorf("%s: got %v, want the trigger to refuse it", sql, err)
		}
	}
	if b := balance(t, svc, "merchant:mer_1"); b != 10 {
		t.Errorf("merchant: got %d, want 10", b)
	}
	// A name outside the chart — a raw payer or merchant id — is
	// refused by the database itself.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO ledger_transactions (message_id, payment_id, kind, amount, currency, occurred_at)
		VALUES (gen_random_uuid(), gen_random_uuid(), 'payment', 10, 'BRL', now()) RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO ledger_entries (transaction_id, account_id, amount, currency) VALUES ($1, 'mer_B', 10, 'BRL'), ($1, 'payer:mer_A:cus_1', -10, 'BRL')`, id); err == nil ||
		!strings.Contains(err.Error(), "ledger_entries_account_id_check") {
		t.Errorf("an entry on a raw id: got %v, want the account name check to refuse it", err)
	}
}

// TestProcessorsSharingMerchantsNeverDeadlock: four claim loops drain a
// shuffled backlog of payments, authorizations, captures, cancellations and
// refunds on few merchants, payers and currencies, so that every batch's
// commit updates balance rows (posted and pending) the others update too.
// No row is ever charged an attempt (a deadlock would be), and every
// balance is the sum of its entries and of its open holds. A refund or a
// capture comes in a second backlog, after what it depends on is applied:
// ahead of it, it would wait, an attempt charged by design.
func TestProcessorsSharingMerchantsNeverDeadlock(t *testing.T) {
	t.Parallel()
	svc, store, pool := newService(t)
	ctx := context.Background()
	currencies := []string{"BRL", "USD"}
	in := func(e event, cur string) []byte {
		return []byte(strings.Replace(string(e.body()), `"BRL"`, `"`+cur+`"`, 1))
	}
	var first, second [][]byte
	for i := range 600 {
		p := newPayment(int64(100+i), fmt.Sprintf("cus_%d", i%5), fmt.Sprintf("mer_%d", i%3))
		cur := currencies[rand.IntN(len(currencies))]
		switch i % 4 {
		case 0:
			first = append(first, in(p, cur))
			second = append(second, in(p.refund(50, 50), cur))
		case 1:
			first = append(first, in(p.authorization(), cur))
			second = append(second, in(p.capture(p.amount-10), cur))
		case 2:
			first = append(first, in(p.authorization(), cur))
			second = append(second, in(p.cancellation(), cur))
		default:
			first = append(first, in(p, cur))
		}
	}
	proc := newProcessor(t, store, nil, inbox.ProcessorConfig{BatchSize: 50, Workers: 4})
	for _, bodies := range [][][]byte{first, second} {
		rand.Shuffle(len(bodies), func(i, j int) { bodies[i], bodies[j] = bodies[j], bodies[i] })
		record(t, svc, bodies...)
		var g errgroup.Group
		for range 4 {
			g.Go(func() error {
				for {
					n, err := proc.Step(ctx)
					if err != nil || n == 0 {
						return err
					}
				}
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	// Postings: every payment, refund and capture; holds post nothing.
	postings := 150*2 + 150 + 150
	drain(t, proc) // rows a failed attempt left due again, if any
	if n := count(t, pool, `SELECT count(*) FROM inbox_messages WHERE attempts > 0 OR processed_at IS NULL`); n != 0 {
		var firstErr string
		_ = pool.QueryRow(ctx, `SELECT coalesce(error, '') FROM inbox_messages WHERE attempts > 0 LIMIT 1`).Scan(&firstErr)
		t.Errorf("%d rows failed an attempt or are not processed (first error: %s), want none", n, firstErr)
	}
	if n := count(t, pool, `SELECT count(*) FROM ledger_transactions`); n != postings {
		t.Errorf("ledger transactions: got %d, want %d", n, postings)
	}
	// Every hold was captured or canceled: nothing is pending.
	if n := count(t, pool, `SELECT count(*) FROM ledger_balances WHERE pending <> 0`); n != 0 {
		t.Errorf("%d balances still pending after every hold was released", n)
	}
	if n := count(t, pool, `
		SELECT count(*) FROM ledger_balances b FULL JOIN
		       (SELECT account_id, currency, sum(amount)::bigint AS total FROM ledger_entries GROUP BY account_id, currency) e
		       USING (account_id, currency)
		WHERE b.posted IS DISTINCT FROM e.total`); n != 0 {
		t.Errorf("%d balances differ from the sum of their entries", n)
	}
}
