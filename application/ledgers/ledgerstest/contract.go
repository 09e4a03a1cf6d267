// Package ledgerstest holds the ledger's test doubles and the contract
// every store of the ledger must honour: FakeStore, an in-memory ledger
// database (the shared inbox's fake with the ledger's tables beside it) for
// the use cases' unit tests, and RunContract, one suite that the fake and the
// Postgres store of adapters/postgres/ledgerstore both pass, so the fake the
// unit tests rely on cannot drift from the real thing. The inbox's own
// contract (inboxtest.RunContract) runs on both as well.
package ledgerstest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// Store is what the contract exercises: the inbox's records and claims
// with the ledger's repository bound to them, and the ledger's reads.
type Store interface {
	inbox.Recorder[ledgers.Ledger]
	inbox.Backlog[ledgers.Ledger]
	inbox.Admin
	ledgers.Reader
}

// Fixed ids, so that a failure message is easy to read. Each subtest gets a
// fresh store, so they never collide.
const (
	msg1     = "0190e7a0-0000-7000-8000-000000000001"
	msg2     = "0190e7a0-0000-7000-8000-000000000002"
	msg3     = "0190e7a0-0000-7000-8000-000000000003"
	payment1 = "0190e7a0-0000-7000-8000-0000000000a1"
	refund1  = "0190e7a0-0000-7000-8000-0000000000b1"
)

var at = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// postings returns the registry's declaration of kind: the contract posts
// as the ledger does.
func postings(t *testing.T, kind ledger.Kind) ledger.Postings {
	t.Helper()
	d, ok := ledgers.PostingsOf(kind)
	if !ok {
		t.Fatalf("the registry declares no kind %q", kind)
	}
	return d
}

func payment(t *testing.T, msgID string) ledger.Transaction {
	t.Helper()
	tx, err := ledger.NewTransfer(ledger.Posting{MessageID: msgID, PaymentID: payment1, Kind: "payment", Payer: "cus_c", Merchant: "mer_c",
		Amount: 1000, Currency: "BRL", OccurredAt: at}, postings(t, "payment"))
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func refund(t *testing.T, msgID string) ledger.Transaction {
	t.Helper()
	tx, err := ledger.NewTransfer(ledger.Posting{MessageID: msgID, PaymentID: payment1, Kind: "refund", FactID: refund1, Payer: "cus_c", Merchant: "mer_c",
		Amount: 400, Currency: "BRL", OccurredAt: at.Add(time.Second)}, postings(t, "refund"))
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func inboxMsg(id string) inbox.Message {
	return inbox.Message{ID: id, Type: ledgers.TypePaymentCreated, Payload: []byte(`{"k":1}`), ReceivedAt: at, ProcessedAt: at}
}

func pendingMsg(id string, received time.Time) inbox.Message {
	return inbox.Message{ID: id, Type: ledgers.TypePaymentCreated, Payload: []byte(`{"k":1}`), ReceivedAt: received}
}

// RunContract runs the contract against stores made by open, one per subtest.
func RunContract(t *testing.T, open func(t *testing.T) Store) {
	ctx := context.Background()

	t.Run("a failed transaction leaves nothing", func(t *testing.T) {
		s := open(t)
		boom := errors.New("boom")
		_, err := s.Record(ctx, inboxMsg(msg1), func(ctx context.Context, l ledgers.Ledger) (string, error) {
			if _, err := l.Post(ctx, payment(t, msg1), at); err != nil {
				return "", err
			}
			return "", boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Record: got %v, want %v", err, boom)
		}
		if ok, err := s.Record(ctx, inboxMsg(msg1), nil); err != nil || !ok {
			t.Errorf("the rolled-back inbox row: got inserted %v, %v; want it gone", ok, err)
		}
		if _, err := s.PaymentTransactions(ctx, payment1); !errors.Is(err, ledger.ErrPaymentNotFound) {
			t.Errorf("rolled-back posting: got %v, want ErrPaymentNotFound", err)
		}
	})

	t.Run("a redelivery posts nothing", func(t *testing.T) {
		s := open(t)
		post := func(ctx context.Context, l ledgers.Ledger) (string, error) {
			_, err := l.Post(ctx, payment(t, msg1), at)
			return "", err
		}
		for i, want := range []bool{true, false} {
			if ok, err := s.Record(ctx, inboxMsg(msg1), post); err != nil || ok != want {
				t.Fatalf("delivery %d: got inserted %v, %v; want %v", i+1, ok, err, want)
			}
		}
		if txs, err := s.PaymentTransactions(ctx, payment1); err != nil || len(txs) != 1 {
			t.Errorf("got %d transactions, %v; want 1", len(txs), err)
		}
	})

	t.Run("post refuses a second posting of the same fact or message", func(t *testing.T) {
		s := open(t)
		var got []bool
		_, err := s.Record(ctx, inboxMsg(msg1), func(ctx context.Context, l ledgers.Ledger) (string, error) {
			for _, tx := range []ledger.Transaction{payment(t, msg1), payment(t, msg2), refund(t, msg1), refund(t, msg3)} {
				ok, err := l.Post(ctx, tx, at)
				if err != nil {
					return "", err
				}
				got = append(got, ok)
			}
			return "", nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// payment: new; same payment, new message: no; refund under the
		// payment's message id: no; the refund under its own id: new.
		if want := []bool{true, false, false, true}; !slices.Equal(got, want) {
			t.Errorf("posted: got %v, want %v", got, want)
		}
	})

	t.Run("reads", func(t *testing.T) {
		s := open(t)
		acc, _ := ledger.PayerAccount("mer_c", "cus_c")
		if _, err := s.Balances(ctx, acc); !errors.Is(err, ledger.ErrAccountNotFound) {
			t.Errorf("empty ledger: got %v, want ErrAccountNotFound", err)
		}
		_, err := s.Record(ctx, inboxMsg(msg1), func(ctx context.Context, l ledgers.Ledger) (string, error) {
			for _, tx := range []ledger.Transaction{refund(t, msg2), payment(t, msg1)} {
				if _, err := l.Post(ctx, tx, at); err != nil {
					return "", err
				}
			}
			return "", nil
		})
		if err != nil {
			t.Fatal(err)
		}
		bs, err := s.Balances(ctx, acc)
		if err != nil || len(bs) != 1 || bs[0].Amount() != -600 || bs[0].Currency() != "BRL" {
			t.Errorf("payer balance: got %v, %v; want -600 BRL", bs, err)
		}
		txs, err := s.PaymentTransactions(ctx, payment1)
		if err != nil || len(txs) != 2 {
			t.Fatalf("PaymentTransactions: got %d, %v; want 2", len(txs), err)
		}
		first := txs[0]
		if first.Kind() != "refund" || first.FactID() != refund1 || first.Amount() != 400 || !first.OccurredAt().Equal(at.Add(time.Second)) {
			t.Errorf("first transaction (in posting order): got %s %s %d %s", first.Kind(), first.FactID(), first.Amount(), first.OccurredAt())
		}
		es := first.Entries()
		if len(es) != 2 || es[0].Account().String() != "merchant:mer_c" || es[0].Amount() != -400 ||
			es[1].Account() != acc || es[1].Amount() != 400 {
			t.Errorf("refund entries: got %+v, want merchant:mer_c -400, payer:mer_c:cus_c +400", es)
		}
	})

	t.Run("Posted finds a payment's fact of a kind by its fact id, or one with none", func(t *testing.T) {
		s := open(t)
		for _, tx := range []ledger.Transaction{payment(t, msg1), refund(t, msg2)} {
			if _, err := s.Record(ctx, inboxMsg(tx.MessageID()), func(ctx context.Context, l ledgers.Ledger) (string, error) {
				_, err := l.Post(ctx, tx, at)
				return "", err
			}); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range []struct {
			paymentID string
			kind      ledger.Kind
			factID    string
			want      bool
		}{
			{payment1, "payment", "", true},
			{payment1, "payment", refund1, true}, // a kind a payment has once has no fact id: any fact follows it
			{payment1, "refund", refund1, true},
			{payment1, "refund", msg3, false}, // another refund's
			{payment1, "refund", "", false},
			{payment1, "capture", "", false},
			{msg3, "payment", "", false}, // another payment's
		} {
			var got bool
			if _, err := s.Record(ctx, inboxMsg(msg3), func(ctx context.Context, l ledgers.Ledger) (string, error) {
				var err error
				got, err = l.Posted(ctx, q.paymentID, q.kind, q.factID)
				return "", errors.Join(err, errors.New("roll back"))
			}); err == nil || got != q.want {
				t.Errorf("Posted(%s, %s, %q): got %v, %v; want %v", q.paymentID, q.kind, q.factID, got, err, q.want)
			}
		}
	})

	t.Run("an account's entries, a page at a time", func(t *testing.T) { entriesContract(t, open) })

	t.Run("balances per currency, sorted, and per merchant", func(t *testing.T) {
		s := open(t)
		post := func(msg, merchant, payer string, amount int64, currency string) {
			tx, err := ledger.NewTransfer(ledger.Posting{MessageID: msg, PaymentID: msg, Kind: "payment", Merchant: merchant, Payer: payer,
				Amount: amount, Currency: currency, OccurredAt: at}, postings(t, "payment"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Record(ctx, inboxMsg(msg), func(ctx context.Context, l ledgers.Ledger) (string, error) {
				_, err := l.Post(ctx, tx, at)
				return "", err
			}); err != nil {
				t.Fatal(err)
			}
		}
		post(msg1, "mer_1", "cus_1", 700, "USD")
		post(msg2, "mer_1", "cus_1", 300, "BRL")
		post(msg3, "mer_2", "cus_1", 50, "BRL") // the same payer id at another merchant
		mer1, _ := ledger.MerchantAccount("mer_1")
		bs, err := s.Balances(ctx, mer1)
		if err != nil || len(bs) != 2 || bs[0].Currency() != "BRL" || bs[0].Amount() != 300 || bs[1].Currency() != "USD" || bs[1].Amount() != 700 {
			t.Errorf("merchant:mer_1: got %v, %v; want 300 BRL, 700 USD", bs, err)
		}
		cus1, _ := ledger.PayerAccount("mer_1", "cus_1")
		if bs, err := s.Balances(ctx, cus1); err != nil || len(bs) != 2 || bs[0].Amount() != -300 || bs[1].Amount() != -700 {
			t.Errorf("payer:mer_1:cus_1: got %v, %v; want -300 BRL, -700 USD (not mer_2's)", bs, err)
		}
		cus2, _ := ledger.PayerAccount("mer_2", "cus_1")
		if bs, err := s.Balances(ctx, cus2); err != nil || len(bs) != 1 || bs[0].Amount() != -50 {
			t.Errorf("payer:mer_2:cus_1: got %v, %v; want -50 BRL", bs, err)
		}
	})

	t.Run("a posting past int64 is refused and leaves nothing", func(t *testing.T) {
		s := open(t)
		const mer = "mer_big"
		id := func(n int) string { return fmt.Sprintf("0190e7a0-0000-7000-8000-%012d", n) }
		// A payment moves money to the merchant, a refund from it.
		transfer := func(n int, payer string, amount int64, kind ledger.Kind) ledger.Transaction {
			fact := ""
			if kind == "refund" {
				fact = id(n)
			}
			tx, err := ledger.NewTransfer(ledger.Posting{MessageID: id(n), PaymentID: id(n), FactID: fact, Merchant: mer, Payer: payer,
				Amount: amount, Currency: "BRL", OccurredAt: at}, postings(t, kind))
			if err != nil {
				t.Fatal(err)
			}
			return tx
		}
		post := func(tx ledger.Transaction) error {
			_, err := s.Record(ctx, inboxMsg(tx.MessageID()), func(ctx context.Context, l ledgers.Ledger) (string, error) {
				_, err := l.Post(ctx, tx, at)
				return "", err
			})
			return err
		}
		balance := func(a ledger.AccountID) int64 {
			t.Helper()
			bs, err := s.Balances(ctx, a)
			if err != nil || len(bs) != 1 {
				t.Fatalf("Balances(%s): %v, %v", a, bs, err)
			}
			return bs[0].Amount()
		}
		merchant, _ := ledger.MerchantAccount(mer)
		x, _ := ledger.PayerAccount(mer, "cus_x")
		if err := post(transfer(1, "cus_y", 5, "refund")); err != nil {
			t.Fatal(err)
		}
		if err := post(transfer(2, "cus_x", math.MaxInt64, "payment")); err != nil {
			t.Fatal(err)
		}
		// The payer's balance would fall below int64's least; the
		// merchant's would not pass its greatest.
		// A refusal a retry would repeat: inbox.ErrPermanent too, so the
		// inbox parks the message instead of retrying it.
		if err := post(transfer(3, "cus_x", 2, "payment")); !errors.Is(err, ledger.ErrBalanceLimit) || !errors.Is(err, inbox.ErrPermanent) {
			t.Errorf("the payer past int64: got %v, want ErrBalanceLimit and inbox.ErrPermanent", err)
		}
		if err := post(transfer(4, "cus_z", 6, "payment")); !errors.Is(err, ledger.ErrBalanceLimit) || !errors.Is(err, inbox.ErrPermanent) {
			t.Errorf("the merchant past int64: got %v, want ErrBalanceLimit and inbox.ErrPermanent", err)
		}
		if got, want := balance(merchant), int64(math.MaxInt64-5); got != want {
			t.Errorf("merchant balance: got %d, want %d", got, want)
		}
		if got, want := balance(x), int64(-math.MaxInt64); got != want {
			t.Errorf("payer balance: got %d, want %d", got, want)
		}
		z, _ := ledger.PayerAccount(mer, "cus_z")
		if _, err := s.Balances(ctx, z); !errors.Is(err, ledger.ErrAccountNotFound) {
			t.Errorf("the refused posting's payer: got %v, want ErrAccountNotFound", err)
		}
		for _, n := range []int{3, 4} {
			if _, err := s.PaymentTransactions(ctx, id(n)); !errors.Is(err, ledger.ErrPaymentNotFound) {
				t.Errorf("refused posting %d: got %v, want nothing posted", n, err)
			}
		}
		// Money leaving the merchant still posts.
		if err := post(transfer(5, "cus_y", 10, "refund")); err != nil {
			t.Errorf("a refund from the full merchant: %v", err)
		}
	})

	t.Run("holds: placed, captured and released, with pending beside posted", func(t *testing.T) {
		s := open(t)
		apply := applier(t, s)
		must := mustApply(t, apply)
		merchant, _ := ledger.MerchantAccount("mer_h")
		balances := func(asOf time.Time) (posted, pending int64) {
			t.Helper()
			var bs []ledger.Balance
			var err error
			if asOf.IsZero() {
				bs, err = s.Balances(ctx, merchant)
			} else {
				bs, err = s.BalancesAsOf(ctx, merchant, asOf)
			}
			if err != nil || len(bs) != 1 || bs[0].Currency() != "BRL" {
				t.Fatalf("balances of %s as of %v: got %v, %v; want one in BRL", merchant, asOf, bs, err)
			}
			return bs[0].Posted(), bs[0].Pending()
		}
		p1, p2 := holdID(1), holdID(2)
		must(authorized(msgID(1), p1, 2500), at)
		must(authorized(msgID(2), p2, 4000), at)
		if posted, pending := balances(time.Time{}); posted != 0 || pending != 6500 {
			t.Errorf("two holds: got posted %d pending %d, want 0 and 6500", posted, pending)
		}
		must(captured(msgID(3), p1, 2000, 2500), at.Add(time.Minute))
		must(canceled(msgID(4), p2, 4000), at.Add(2*time.Minute))
		if posted, pending := balances(time.Time{}); posted != 2000 || pending != 0 {
			t.Errorf("captured 2000 of 2500, the other canceled: got posted %d pending %d, want 2000 and 0", posted, pending)
		}
		if posted, pending := balances(at.Add(time.Minute - time.Second)); posted != 0 || pending != 6500 {
			t.Errorf("as of before the capture: got posted %d pending %d, want 0 and 6500", posted, pending)
		}
		if posted, pending := balances(at.Add(time.Minute)); posted != 2000 || pending != 4000 {
			t.Errorf("as of the capture: got posted %d pending %d, want 2000 and 4000", posted, pending)
		}
		if _, err := s.BalancesAsOf(ctx, merchant, at.Add(-time.Second)); !errors.Is(err, ledger.ErrAccountNotFound) {
			t.Errorf("as of before anything: got %v, want ErrAccountNotFound", err)
		}
		txs, err := s.PaymentTransactions(ctx, p1)
		if err != nil || len(txs) != 1 || txs[0].Kind() != "capture" || txs[0].Amount() != 2000 {
			t.Errorf("the capture's transaction: got %v, %v; want one capture of 2000", txs, err)
		}
		if _, err := s.PaymentTransactions(ctx, p2); !errors.Is(err, ledger.ErrPaymentNotFound) {
			t.Errorf("a canceled payment posted: got %v, want nothing", err)
		}
	})

	t.Run("what the ledger is told is checked against the payment", func(t *testing.T) {
		s := open(t)
		apply := applier(t, s)
		must := mustApply(t, apply)
		p1 := holdID(1)
		// Ahead of its authorization: retried, not refused.
		for _, ev := range []inbox.Event{captured(msgID(1), p1, 100, 2500), canceled(msgID(2), p1, 2500), refunded(msgID(3), p1, refundID(1), 100)} {
			if _, err := apply(ev, at); !errors.Is(err, ledger.ErrOutOfOrder) || errors.Is(err, inbox.ErrPermanent) {
				t.Errorf("%s before the authorization: got %v, want ErrOutOfOrder and not ErrPermanent", ev.Type, err)
			}
		}
		must(authorized(msgID(4), p1, 2500), at)
		if _, err := apply(refunded(msgID(5), p1, refundID(1), 100), at); !errors.Is(err, ledger.ErrOutOfOrder) || errors.Is(err, inbox.ErrPermanent) {
			t.Errorf("a refund before the capture: got %v, want ErrOutOfOrder", err)
		}
		refused := func(what string, ev inbox.Event, want error) {
			t.Helper()
			if _, err := apply(ev, at); !errors.Is(err, want) || !errors.Is(err, inbox.ErrPermanent) {
				t.Errorf("%s: got %v, want %v and inbox.ErrPermanent", what, err, want)
			}
		}
		refused("a capture past the hold", captured(msgID(6), p1, 2501, 2501), ledger.ErrPaymentConflict)
		refused("a capture past the hold it names", captured(msgID(7), p1, 3000, 3000), ledger.ErrPaymentConflict)
		refused("a capture in another currency", withCurrency(captured(msgID(8), p1, 100, 2500), "USD"), ledger.ErrCurrencyMismatch)
		refused("a capture in no currency", withCurrency(captured(msgID(9), p1, 100, 2500), "XYZ"), ledger.ErrUnknownCurrency)
		refused("a second authorization of another amount", authorized(msgID(10), p1, 9), ledger.ErrPaymentConflict)
		if ok, err := apply(authorized(msgID(11), p1, 2500), at); err != nil || ok {
			t.Errorf("the authorization again, under another message id: got %v, %v; want a duplicate", ok, err)
		}
		must(captured(msgID(12), p1, 1000, 2500), at)
		if ok, err := apply(captured(msgID(13), p1, 1000, 2500), at); err != nil || ok {
			t.Errorf("the capture again, under another message id: got %v, %v; want a duplicate", ok, err)
		}
		refused("a second capture", captured(msgID(14), p1, 500, 2500), ledger.ErrHoldReleased)
		refused("a cancellation after the capture", canceled(msgID(15), p1, 2500), ledger.ErrHoldReleased)
		must(refunded(msgID(16), p1, refundID(1), 600), at)
		refused("refunds past what was captured", refunded(msgID(17), p1, refundID(2), 401), ledger.ErrRefundExceedsCaptured)
		must(refunded(msgID(18), p1, refundID(3), 400), at)
		if ok, err := apply(refunded(msgID(19), p1, refundID(3), 400), at); err != nil || ok {
			t.Errorf("a refund again, under another message id, at the limit: got %v, %v; want a duplicate", ok, err)
		}

		// A payment captured at once has no hold, and refunds of it are held
		// to its amount.
		p2 := holdID(2)
		must(created(msgID(20), p2, 1000), at)
		refused("a capture of a payment captured at once", captured(msgID(21), p2, 100, 1000), ledger.ErrNoHold)
		refused("an authorization of a payment captured at once", authorized(msgID(22), p2, 1000), ledger.ErrPaymentConflict)
		refused("a refund past an automatic payment", refunded(msgID(23), p2, refundID(4), 1001), ledger.ErrRefundExceedsCaptured)

		// An event naming another merchant, or another hold.
		p5 := holdID(5)
		must(authorized(msgID(31), p5, 500), at)
		refused("a capture naming another merchant", withMerchant(captured(msgID(32), p5, 500, 500), "mer_x"), ledger.ErrPaymentConflict)
		refused("a cancellation naming another merchant", withMerchant(canceled(msgID(33), p5, 500), "mer_x"), ledger.ErrPaymentConflict)
		refused("a cancellation of another hold", canceled(msgID(34), p5, 499), ledger.ErrPaymentConflict)
		refused("a refund naming another merchant", withMerchant(refunded(msgID(35), p2, refundID(6), 1), "mer_x"), ledger.ErrPaymentConflict)
		must(canceled(msgID(36), p5, 500), at)

		// A payment.created of an authorized payment contradicts it.
		p4 := holdID(4)
		must(authorized(msgID(29), p4, 300), at)
		refused("a payment captured at once that the ledger holds as authorized", created(msgID(30), p4, 300), ledger.ErrPaymentConflict)

		// A canceled hold: nothing to capture, nothing to refund.
		p3 := holdID(3)
		must(authorized(msgID(24), p3, 700), at)
		must(canceled(msgID(25), p3, 700), at)
		if ok, err := apply(canceled(msgID(26), p3, 700), at); err != nil || ok {
			t.Errorf("the cancellation again: got %v, %v; want a duplicate", ok, err)
		}
		refused("a capture after the cancellation", captured(msgID(27), p3, 700, 700), ledger.ErrHoldReleased)
		refused("a refund of a canceled payment", refunded(msgID(28), p3, refundID(5), 1), ledger.ErrRefundExceedsCaptured)

		merchant, _ := ledger.MerchantAccount("mer_h")
		bs, err := s.Balances(ctx, merchant)
		if err != nil || len(bs) != 1 || bs[0].Posted() != 1000+1000-1000 || bs[0].Pending() != 300 {
			t.Errorf("after it all: got %v, %v; want posted 1000 (a capture and a payment of 1000, refunds of 1000), 300 pending (the one open hold)", bs, err)
		}
	})

	t.Run("a failed apply rolls back its savepoint only; a failed batch rolls back all", func(t *testing.T) {
		s := open(t)
		insert(t, s, pendingMsg(msg1, at), pendingMsg(msg2, at.Add(time.Second)))
		boom := errors.New("boom")
		c := inbox.Claim{Limit: 10, Types: []string{ledgers.TypePaymentCreated}}
		_, err := s.ClaimPending(ctx, c, func(ctx context.Context, rows []inbox.PendingMessage, apply inbox.ApplyFunc[ledgers.Ledger]) (inbox.BatchResult, error) {
			if err := apply(ctx, inbox.Event{ID: msg1}, func(ctx context.Context, l ledgers.Ledger) error {
				_, err := l.Post(ctx, payment(t, msg1), at)
				return err
			}); err != nil {
				return inbox.BatchResult{}, err
			}
			return inbox.BatchResult{}, boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want %v", err, boom)
		}
		if _, err := s.PaymentTransactions(ctx, payment1); !errors.Is(err, ledger.ErrPaymentNotFound) {
			t.Errorf("a failed batch kept its posting: %v", err)
		}
		claimIDs(t, s, c, func(rows []inbox.PendingMessage, apply inbox.ApplyFunc[ledgers.Ledger]) inbox.BatchResult {
			err := apply(ctx, inbox.Event{ID: msg2}, func(ctx context.Context, l ledgers.Ledger) error {
				_, err := l.Post(ctx, refund(t, msg2), at)
				return err
			})
			if err != nil {
				t.Error(err)
			}
			err = apply(ctx, inbox.Event{ID: msg1}, func(ctx context.Context, l ledgers.Ledger) error {
				if _, err := l.Post(ctx, payment(t, msg1), at); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Errorf("apply: got %v, want %v", err, boom)
			}
			return inbox.BatchResult{At: time.Now(), Processed: []inbox.Processed{{ID: msg2}}}
		})
		txs, err := s.PaymentTransactions(ctx, payment1)
		if err != nil || len(txs) != 1 || txs[0].Kind() != "refund" {
			t.Errorf("got %d transactions, %v; want only the refund, the failed savepoint's payment rolled back", len(txs), err)
		}
		if got := claimIDs(t, s, c, nil); len(got) != 1 || got[0] != msg1 {
			t.Errorf("still pending: got %v, want [%s]", got, msg1)
		}
	})
}

// claimIDs claims with c and returns the ids claimed, writing out whatever
// fn makes of them.
// applier applies events to s as the sync inbox does: the handler's check,
// then its apply in the transaction that records the message.
func applier(t *testing.T, s Store) func(ev inbox.Event, at time.Time) (bool, error) {
	return func(ev inbox.Event, at time.Time) (bool, error) {
		t.Helper()
		in, err := ledgers.Handler{}.Check(ev, "1")
		if err != nil {
			t.Fatalf("check %s: %v", ev.Type, err)
		}
		var applied bool
		msg := inbox.Message{ID: ev.ID, Type: ev.Type, Payload: []byte(`{}`), ReceivedAt: at, ProcessedAt: at}
		_, err = s.Record(context.Background(), msg, func(ctx context.Context, l ledgers.Ledger) (string, error) {
			var err error
			applied, err = ledgers.Handler{}.Apply(ctx, l, in, at)
			return "", err
		})
		return applied, err
	}
}

func mustApply(t *testing.T, apply func(inbox.Event, time.Time) (bool, error)) func(inbox.Event, time.Time) {
	return func(ev inbox.Event, at time.Time) {
		t.Helper()
		if applied, err := apply(ev, at); err != nil || !applied {
			t.Fatalf("apply %s %s: got %v, %v; want applied", ev.Type, ev.ID, applied, err)
		}
	}
}

func msgID(n int) string    { return fmt.Sprintf("0190e7a0-0000-7000-8000-%012d", 100+n) }
func holdID(n int) string   { return fmt.Sprintf("0190e7a0-0000-7000-8000-0000000001%02d", n) }
func refundID(n int) string { return fmt.Sprintf("0190e7a0-0000-7000-8000-0000000002%02d", n) }

func holdEvent(typ, id, paymentID, data string) inbox.Event {
	return inbox.Event{ID: id, Type: typ, Subject: paymentID, Time: at,
		Data: []byte(`{"payment_id":"` + paymentID + `","currency":"BRL","payer_id":"cus_h","merchant_id":"mer_h",` + data + `}`)}
}

func authorized(id, paymentID string, amount int64) inbox.Event {
	return holdEvent(ledgers.TypePaymentAuthorized, id, paymentID, fmt.Sprintf(`"amount":%d,"capture_before":"2026-12-06T12:00:00Z"`, amount))
}

func captured(id, paymentID string, amount, authorized int64) inbox.Event {
	return holdEvent(ledgers.TypePaymentCaptured, id, paymentID,
		fmt.Sprintf(`"amount":%d,"amount_authorized":%d,"amount_released":%d`, amount, authorized, authorized-amount))
}

func canceled(id, paymentID string, amount int64) inbox.Event {
	return holdEvent(ledgers.TypePaymentCanceled, id, paymentID, fmt.Sprintf(`"amount":%d,"cancellation_reason":"requested_by_customer"`, amount))
}

func created(id, paymentID string, amount int64) inbox.Event {
	return holdEvent(ledgers.TypePaymentCreated, id, paymentID, fmt.Sprintf(`"amount":%d`, amount))
}

func refunded(id, paymentID, refundID string, amount int64) inbox.Event {
	return holdEvent(ledgers.TypePaymentRefunded, id, paymentID, fmt.Sprintf(`"refund_id":%q,"amount":%d`, refundID, amount))
}

func withMerchant(ev inbox.Event, merchant string) inbox.Event {
	ev.Data = []byte(strings.Replace(string(ev.Data), `"mer_h"`, `"`+merchant+`"`, 1))
	return ev
}

func withCurrency(ev inbox.Event, currency string) inbox.Event {
	ev.Data = []byte(strings.Replace(string(ev.Data), `"BRL"`, `"`+currency+`"`, 1))
	return ev
}

func claimIDs(t *testing.T, s Store, c inbox.Claim, fn func([]inbox.PendingMessage, inbox.ApplyFunc[ledgers.Ledger]) inbox.BatchResult) []string {
	t.Helper()
	var ids []string
	_, err := s.ClaimPending(context.Background(), c, func(_ context.Context, rows []inbox.PendingMessage, apply inbox.ApplyFunc[ledgers.Ledger]) (inbox.BatchResult, error) {
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		if fn == nil {
			return inbox.BatchResult{}, nil
		}
		return fn(rows, apply), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func insert(t *testing.T, s Store, msgs ...inbox.Message) {
	t.Helper()
	for _, m := range msgs {
		if _, err := s.Record(context.Background(), m, nil); err != nil {
			t.Fatal(err)
		}
	}
}
