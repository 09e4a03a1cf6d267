// Package bookkeepingtest holds the ledger's test doubles and the contract
// every store of the ledger must honour: FakeStore, an in-memory ledger
// database (the shared inbox's fake with the ledger's tables beside it) for
// the use cases' unit tests, and RunContract, one suite that the fake and the
// Postgres store of adapters/postgres/ledgerstore both pass, so the fake the
// unit tests rely on cannot drift from the real thing. The inbox's own
// contract (inboxtest.RunContract) runs on both as well.
package bookkeepingtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/bookkeeping"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// Store is what the contract exercises: the inbox's records and claims
// with the ledger's repository bound to them, and the ledger's reads.
type Store interface {
	inbox.Recorder[bookkeeping.Ledger]
	inbox.Backlog[bookkeeping.Ledger]
	inbox.Admin
	bookkeeping.Reader
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

func payment(t *testing.T, msgID string) ledger.Transaction {
	t.Helper()
	tx, err := ledger.NewTransfer(ledger.Posting{MessageID: msgID, PaymentID: payment1, Kind: "payment", Payer: "cus_c", Merchant: "mer_c",
		Amount: 1000, Currency: "BRL", OccurredAt: at}, ledger.PayerToMerchant)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func refund(t *testing.T, msgID string) ledger.Transaction {
	t.Helper()
	tx, err := ledger.NewTransfer(ledger.Posting{MessageID: msgID, PaymentID: payment1, Kind: "refund", FactID: refund1, Payer: "cus_c", Merchant: "mer_c",
		Amount: 400, Currency: "BRL", OccurredAt: at.Add(time.Second)}, ledger.MerchantToPayer)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func inboxMsg(id string) inbox.Message {
	return inbox.Message{ID: id, Type: bookkeeping.TypePaymentCreated, Payload: []byte(`{"k":1}`), ReceivedAt: at, ProcessedAt: at}
}

func pendingMsg(id string, received time.Time) inbox.Message {
	return inbox.Message{ID: id, Type: bookkeeping.TypePaymentCreated, Payload: []byte(`{"k":1}`), ReceivedAt: received}
}

// RunContract runs the contract against stores made by open, one per subtest.
func RunContract(t *testing.T, open func(t *testing.T) Store) {
	ctx := context.Background()

	t.Run("a failed transaction leaves nothing", func(t *testing.T) {
		s := open(t)
		boom := errors.New("boom")
		_, err := s.Record(ctx, inboxMsg(msg1), func(ctx context.Context, l bookkeeping.Ledger) (string, error) {
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
		post := func(ctx context.Context, l bookkeeping.Ledger) (string, error) {
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
		_, err := s.Record(ctx, inboxMsg(msg1), func(ctx context.Context, l bookkeeping.Ledger) (string, error) {
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
		_, err := s.Record(ctx, inboxMsg(msg1), func(ctx context.Context, l bookkeeping.Ledger) (string, error) {
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

	t.Run("an account's entries, a page at a time", func(t *testing.T) { entriesContract(t, open) })

	t.Run("balances per currency, sorted, and per merchant", func(t *testing.T) {
		s := open(t)
		post := func(msg, merchant, payer string, amount int64, currency string) {
			tx, err := ledger.NewTransfer(ledger.Posting{MessageID: msg, PaymentID: msg, Kind: "payment", Merchant: merchant, Payer: payer,
				Amount: amount, Currency: currency, OccurredAt: at}, ledger.PayerToMerchant)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Record(ctx, inboxMsg(msg), func(ctx context.Context, l bookkeeping.Ledger) (string, error) {
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
		transfer := func(n int, payer string, amount int64, d ledger.Direction) ledger.Transaction {
			kind, fact := ledger.Kind("payment"), ""
			if d == ledger.MerchantToPayer {
				kind, fact = "refund", id(n)
			}
			tx, err := ledger.NewTransfer(ledger.Posting{MessageID: id(n), PaymentID: id(n), Kind: kind, FactID: fact, Merchant: mer, Payer: payer,
				Amount: amount, Currency: "BRL", OccurredAt: at}, d)
			if err != nil {
				t.Fatal(err)
			}
			return tx
		}
		post := func(tx ledger.Transaction) error {
			_, err := s.Record(ctx, inboxMsg(tx.MessageID()), func(ctx context.Context, l bookkeeping.Ledger) (string, error) {
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
		if err := post(transfer(1, "cus_y", 5, ledger.MerchantToPayer)); err != nil {
			t.Fatal(err)
		}
		if err := post(transfer(2, "cus_x", math.MaxInt64, ledger.PayerToMerchant)); err != nil {
			t.Fatal(err)
		}
		// The payer's balance would fall below int64's least; the
		// merchant's would not pass its greatest.
		// A refusal a retry would repeat: inbox.ErrPermanent too, so the
		// inbox parks the message instead of retrying it.
		if err := post(transfer(3, "cus_x", 2, ledger.PayerToMerchant)); !errors.Is(err, ledger.ErrBalanceLimit) || !errors.Is(err, inbox.ErrPermanent) {
			t.Errorf("the payer past int64: got %v, want ErrBalanceLimit and inbox.ErrPermanent", err)
		}
		if err := post(transfer(4, "cus_z", 6, ledger.PayerToMerchant)); !errors.Is(err, ledger.ErrBalanceLimit) || !errors.Is(err, inbox.ErrPermanent) {
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
		if err := post(transfer(5, "cus_y", 10, ledger.MerchantToPayer)); err != nil {
			t.Errorf("a refund from the full merchant: %v", err)
		}
	})

	t.Run("a failed apply rolls back its savepoint only; a failed batch rolls back all", func(t *testing.T) {
		s := open(t)
		insert(t, s, pendingMsg(msg1, at), pendingMsg(msg2, at.Add(time.Second)))
		boom := errors.New("boom")
		c := inbox.Claim{Limit: 10, Types: []string{bookkeeping.TypePaymentCreated}}
		_, err := s.ClaimPending(ctx, c, func(ctx context.Context, rows []inbox.PendingMessage, apply inbox.ApplyFunc[bookkeeping.Ledger]) (inbox.BatchResult, error) {
			if err := apply(ctx, inbox.Event{ID: msg1}, func(ctx context.Context, l bookkeeping.Ledger) error {
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
		claimIDs(t, s, c, func(rows []inbox.PendingMessage, apply inbox.ApplyFunc[bookkeeping.Ledger]) inbox.BatchResult {
			err := apply(ctx, inbox.Event{ID: msg2}, func(ctx context.Context, l bookkeeping.Ledger) error {
				_, err := l.Post(ctx, refund(t, msg2), at)
				return err
			})
			if err != nil {
				t.Error(err)
			}
			err = apply(ctx, inbox.Event{ID: msg1}, func(ctx context.Context, l bookkeeping.Ledger) error {
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
func claimIDs(t *testing.T, s Store, c inbox.Claim, fn func([]inbox.PendingMessage, inbox.ApplyFunc[bookkeeping.Ledger]) inbox.BatchResult) []string {
	t.Helper()
	var ids []string
	_, err := s.ClaimPending(context.Background(), c, func(_ context.Context, rows []inbox.PendingMessage, apply inbox.ApplyFunc[bookkeeping.Ledger]) (inbox.BatchResult, error) {
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
