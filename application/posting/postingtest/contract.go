// Package postingtest holds the posting package's test doubles and the
// contract every implementation of its storage ports must honour: FakeStore,
// an in-memory ledger database for the use cases' unit tests, and
// RunContract, one suite that the fake and the Postgres store of
// adapters/postgres/ledgerstore both pass, so the fake the unit tests rely on
// cannot drift from the real thing.
package postingtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/posting"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// Store is what the contract exercises: the write and read ports together.
type Store interface {
	posting.Transactor
	posting.Reader
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

func inboxMsg(id string) posting.InboxMessage {
	return posting.InboxMessage{ID: id, Type: posting.TypePaymentCreated, Payload: []byte(`{"k":1}`), ReceivedAt: at, ProcessedAt: at}
}

// RunContract runs the contract against stores made by open, one per subtest.
func RunContract(t *testing.T, open func(t *testing.T) Store) {
	ctx := context.Background()

	t.Run("inbox insert is idempotent", func(t *testing.T) {
		s := open(t)
		var got []bool
		for range 2 {
			err := s.Transact(ctx, func(r posting.Repos) error {
				ok, err := r.Inbox.Insert(ctx, inboxMsg(msg1))
				got = append(got, ok)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if !got[0] || got[1] {
			t.Errorf("inserted: got %v, want [true false]", got)
		}
	})

	t.Run("a failed transaction leaves nothing", func(t *testing.T) {
		s := open(t)
		boom := errors.New("boom")
		err := s.Transact(ctx, func(r posting.Repos) error {
			if _, err := r.Inbox.Insert(ctx, inboxMsg(msg1)); err != nil {
				return err
			}
			if _, err := r.Ledger.Post(ctx, payment(t, msg1), at); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Transact: got %v, want %v", err, boom)
		}
		err = s.Transact(ctx, func(r posting.Repos) error {
			ok, err := r.Inbox.Insert(ctx, inboxMsg(msg1))
			if err == nil && !ok {
				t.Error("the rolled-back inbox row is still there")
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.PaymentTransactions(ctx, payment1); !errors.Is(err, ledger.ErrPaymentNotFound) {
			t.Errorf("rolled-back posting: got %v, want ErrPaymentNotFound", err)
		}
	})

	t.Run("post refuses a second posting of the same fact or message", func(t *testing.T) {
		s := open(t)
		var got []bool
		err := s.Transact(ctx, func(r posting.Repos) error {
			for _, tx := range []ledger.Transaction{payment(t, msg1), payment(t, msg2), refund(t, msg1), refund(t, msg3)} {
				ok, err := r.Ledger.Post(ctx, tx, at)
				if err != nil {
					return err
				}
				got = append(got, ok)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// payment: new; same payment, new message: no; refund under the
		// payment's message id: no; the refund under its own id: new.
		if want := []bool{true, false, false, true}; !equal(got, want) {
			t.Errorf("posted: got %v, want %v", got, want)
		}
	})

	t.Run("reads", func(t *testing.T) {
		s := open(t)
		acc, _ := ledger.NewAccountID("cus_c")
		if _, err := s.Balances(ctx, acc); !errors.Is(err, ledger.ErrAccountNotFound) {
			t.Errorf("empty ledger: got %v, want ErrAccountNotFound", err)
		}
		err := s.Transact(ctx, func(r posting.Repos) error {
			for _, tx := range []ledger.Transaction{refund(t, msg2), payment(t, msg1)} {
				if _, err := r.Ledger.Post(ctx, tx, at); err != nil {
					return err
				}
			}
			return nil
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
		if len(es) != 2 || es[0].Account().String() != "mer_c" || es[0].Amount() != -400 || es[1].Account().String() != "cus_c" || es[1].Amount() != 400 {
			t.Errorf("refund entries: got %+v, want mer_c -400, cus_c +400", es)
		}
	})
}

func equal(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
