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
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/posting"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// Store is what the contract exercises: the write and read ports together.
type Store interface {
	posting.Transactor
	posting.Reader
	posting.Backlog
	posting.InboxAdmin
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

	runBacklogContract(t, open)

	t.Run("reads", func(t *testing.T) {
		s := open(t)
		acc, _ := ledger.PayerAccount("mer_c", "cus_c")
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
		if len(es) != 2 || es[0].Account().String() != "merchant:mer_c" || es[0].Amount() != -400 ||
			es[1].Account() != acc || es[1].Amount() != 400 {
			t.Errorf("refund entries: got %+v, want merchant:mer_c -400, payer:mer_c:cus_c +400", es)
		}
	})

	t.Run("balances per currency, sorted, and per merchant", func(t *testing.T) {
		s := open(t)
		post := func(msg, merchant, payer string, amount int64, currency string) {
			tx, err := ledger.NewTransfer(ledger.Posting{MessageID: msg, PaymentID: msg, Kind: "payment", Merchant: merchant, Payer: payer,
				Amount: amount, Currency: currency, OccurredAt: at}, ledger.PayerToMerchant)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Transact(ctx, func(r posting.Repos) error { _, err := r.Ledger.Post(ctx, tx, at); return err }); err != nil {
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
			return s.Transact(ctx, func(r posting.Repos) error {
				if _, err := r.Inbox.Insert(ctx, inboxMsg(tx.MessageID())); err != nil {
					return err
				}
				_, err := r.Ledger.Post(ctx, tx, at)
				return err
			})
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
		if err := post(transfer(3, "cus_x", 2, ledger.PayerToMerchant)); !errors.Is(err, ledger.ErrBalanceLimit) {
			t.Errorf("the payer past int64: got %v, want ErrBalanceLimit", err)
		}
		if err := post(transfer(4, "cus_z", 6, ledger.PayerToMerchant)); !errors.Is(err, ledger.ErrBalanceLimit) {
			t.Errorf("the merchant past int64: got %v, want ErrBalanceLimit", err)
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

	t.Run("a message recorded parked waits for the operator", func(t *testing.T) {
		s := open(t)
		m := pendingMsg(msg1, posting.TypePaymentCreated, at)
		m.ParkedAt, m.Error = at, "balance limit"
		insert(t, s, m)
		c := posting.Claim{Limit: 10, Types: []string{posting.TypePaymentCreated}}
		if got := claimIDs(t, s, c, nil); len(got) != 0 {
			t.Fatalf("a parked row was claimed: %v", got)
		}
		if st, err := s.InboxStats(ctx, c.Types); err != nil || st.Parked != 1 || st.Pending != 0 {
			t.Errorf("stats: got %+v, %v; want 1 parked", st, err)
		}
		if n, err := s.Retry(ctx, []string{msg1}); err != nil || n != 1 {
			t.Fatalf("retry: got %d, %v; want 1", n, err)
		}
		var attempts int
		got := claimIDs(t, s, c, func(rows []posting.PendingMessage, _ posting.ApplyFunc) posting.BatchResult {
			attempts = rows[0].Attempts
			return posting.BatchResult{}
		})
		if len(got) != 1 || attempts != 0 {
			t.Errorf("after retry: got %v with %d attempts, want [%s] with 0", got, attempts, msg1)
		}
	})
}

func pendingMsg(id, typ string, received time.Time) posting.InboxMessage {
	return posting.InboxMessage{ID: id, Type: typ, Payload: []byte(`{"k":1}`), ReceivedAt: received}
}

// claimIDs claims with c and returns the ids claimed, writing out whatever
// fn makes of them (nothing when fn is nil).
func claimIDs(t *testing.T, s Store, c posting.Claim, fn func([]posting.PendingMessage, posting.ApplyFunc) posting.BatchResult) []string {
	t.Helper()
	var ids []string
	_, err := s.ClaimPending(context.Background(), c, func(_ context.Context, rows []posting.PendingMessage, apply posting.ApplyFunc) (posting.BatchResult, error) {
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		if fn == nil {
			return posting.BatchResult{}, nil
		}
		return fn(rows, apply), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func insert(t *testing.T, s Store, msgs ...posting.InboxMessage) {
	t.Helper()
	err := s.Transact(context.Background(), func(r posting.Repos) error {
		for _, m := range msgs {
			if _, err := r.Inbox.Insert(context.Background(), m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runBacklogContract is the processor's side of the contract: claims,
// savepoints, outcomes, stats and retries.
func runBacklogContract(t *testing.T, open func(t *testing.T) Store) {
	ctx := context.Background()
	created := []string{posting.TypePaymentCreated}
	const msg4 = "0190e7a0-0000-7000-8000-000000000004"

	t.Run("claim takes the oldest due pending rows of the given types", func(t *testing.T) {
		s := open(t)
		insert(t, s,
			pendingMsg(msg2, posting.TypePaymentCreated, at.Add(time.Second)),
			pendingMsg(msg1, posting.TypePaymentCreated, at),
			inboxMsg(msg3), // processed
			pendingMsg(msg4, "payment.disputed", at.Add(-time.Hour)))
		if got := claimIDs(t, s, posting.Claim{Limit: 1, Types: created}, nil); len(got) != 1 || got[0] != msg1 {
			t.Errorf("limit 1: got %v, want [%s] (the oldest)", got, msg1)
		}
		if got := claimIDs(t, s, posting.Claim{Limit: 10, Types: created}, nil); len(got) != 2 || got[0] != msg1 || got[1] != msg2 {
			t.Errorf("got %v, want [%s %s]: not the processed row, not the type not asked for", got, msg1, msg2)
		}
		if got := claimIDs(t, s, posting.Claim{Limit: 10, Types: created, IDs: []string{msg2, msg3}}, nil); len(got) != 1 || got[0] != msg2 {
			t.Errorf("by id: got %v, want [%s]", got, msg2)
		}
		if got := claimIDs(t, s, posting.Claim{Limit: 10, Types: []string{"payment.disputed"}}, nil); len(got) != 1 || got[0] != msg4 {
			t.Errorf("a type learned later: got %v, want [%s]", got, msg4)
		}
		st, err := s.InboxStats(ctx, created)
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending != 2 || st.Unhandled != 1 || st.Parked != 0 || st.OldestPending <= 0 {
			t.Errorf("stats: got %+v, want 2 pending, 1 unhandled, none parked, an oldest age", st)
		}
	})

	t.Run("outcomes: retry later, park, retry by the operator, processed", func(t *testing.T) {
		s := open(t)
		insert(t, s, pendingMsg(msg1, posting.TypePaymentCreated, at))
		c := posting.Claim{Limit: 10, Types: created}
		claimIDs(t, s, c, func(rows []posting.PendingMessage, _ posting.ApplyFunc) posting.BatchResult {
			return posting.BatchResult{At: time.Now(), Retry: []posting.Failure{{ID: msg1, Error: "boom", Attempts: 1, NextAttemptAt: time.Now().Add(time.Hour)}}}
		})
		if got := claimIDs(t, s, c, nil); len(got) != 0 {
			t.Fatalf("a row due in an hour was claimed: %v", got)
		}
		if st, _ := s.InboxStats(ctx, created); st.Pending != 1 {
			t.Errorf("a row waiting for its retry is pending: got %+v", st)
		}
		if _, err := s.Retry(ctx, []string{msg1}); !errors.Is(err, posting.ErrUnknownMessage) {
			t.Errorf("retry of a row that is not parked: got %v, want ErrUnknownMessage", err)
		}

		insert(t, s, pendingMsg(msg2, posting.TypePaymentCreated, at))
		var attempts int
		claimIDs(t, s, c, func(rows []posting.PendingMessage, _ posting.ApplyFunc) posting.BatchResult {
			attempts = rows[0].Attempts
			return posting.BatchResult{At: time.Now(), Retry: []posting.Failure{{ID: msg2, Error: "boom", Attempts: 1, NextAttemptAt: time.Now().Add(-time.Second)}}}
		})
		got := claimIDs(t, s, c, func(rows []posting.PendingMessage, _ posting.ApplyFunc) posting.BatchResult {
			attempts = rows[0].Attempts
			return posting.BatchResult{At: time.Now(), Parked: []posting.Failure{{ID: msg2, Error: "boom again", Attempts: 2}}}
		})
		if len(got) != 1 || got[0] != msg2 || attempts != 1 {
			t.Fatalf("a row due again: got %v with %d attempts, want [%s] with 1", got, attempts, msg2)
		}
		if got := claimIDs(t, s, c, nil); len(got) != 0 {
			t.Fatalf("a parked row was claimed: %v", got)
		}
		if st, _ := s.InboxStats(ctx, created); st.Parked != 1 || st.Pending != 1 {
			t.Errorf("stats: got %+v, want 1 parked, 1 pending", st)
		}
		if n, err := s.Retry(ctx, nil); err != nil || n != 1 {
			t.Fatalf("retry all parked: got %d, %v; want 1", n, err)
		}
		got = claimIDs(t, s, c, func(rows []posting.PendingMessage, _ posting.ApplyFunc) posting.BatchResult {
			attempts = rows[0].Attempts
			return posting.BatchResult{At: time.Now(), Processed: []posting.Processed{{ID: msg2}}}
		})
		if len(got) != 1 || attempts != 0 {
			t.Fatalf("after retry: got %v with %d attempts, want [%s] with 0", got, attempts, msg2)
		}
		if st, _ := s.InboxStats(ctx, created); st.Parked != 0 || st.Pending != 1 {
			t.Errorf("stats after processing: got %+v, want none parked, 1 pending (the row due in an hour)", st)
		}
	})

	t.Run("unhandled rows past the cutoff are deleted, in batches; nothing else is", func(t *testing.T) {
		s := open(t)
		const (
			disputed = "payment.disputed" // a type this version does not apply
			old1     = "0190e7a0-0000-7000-8000-0000000000c1"
			old2     = "0190e7a0-0000-7000-8000-0000000000c2"
			old3     = "0190e7a0-0000-7000-8000-0000000000c3"
			recent   = "0190e7a0-0000-7000-8000-0000000000c4"
			parked   = "0190e7a0-0000-7000-8000-0000000000c5"
			done     = "0190e7a0-0000-7000-8000-0000000000c6"
		)
		cutoff := at.Add(-time.Hour)
		past := cutoff.Add(-24 * time.Hour)
		processed := pendingMsg(done, disputed, past) // an ignored type's row: done on arrival
		processed.ProcessedAt = past
		insert(t, s,
			pendingMsg(old1, disputed, past), pendingMsg(old2, disputed, past.Add(time.Second)), pendingMsg(old3, disputed, past.Add(2*time.Second)),
			pendingMsg(recent, disputed, cutoff.Add(time.Second)),
			pendingMsg(parked, disputed, past), processed,
			pendingMsg(msg1, posting.TypePaymentCreated, past), pendingMsg(msg2, posting.TypePaymentCreated, past))
		// A version that applies the type parked two rows; an older one must
		// keep them.
		claimIDs(t, s, posting.Claim{Limit: 10, Types: []string{disputed, posting.TypePaymentCreated}, IDs: []string{parked, msg2}},
			func(rows []posting.PendingMessage, _ posting.ApplyFunc) posting.BatchResult {
				return posting.BatchResult{At: time.Now(), Parked: []posting.Failure{{ID: parked, Error: "boom", Attempts: 1}, {ID: msg2, Error: "boom", Attempts: 1}}}
			})

		var got []int
		for range 3 {
			n, err := s.DeleteUnhandled(ctx, created, cutoff, 2)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, n)
		}
		if want := []int{2, 1, 0}; !slices.Equal(got, want) {
			t.Errorf("deleted per batch of 2: got %v, want %v (the three unhandled rows older than the cutoff)", got, want)
		}
		st, err := s.InboxStats(ctx, created)
		if err != nil {
			t.Fatal(err)
		}
		if st.Unhandled != 1 || st.Pending != 1 || st.Parked != 2 {
			t.Errorf("stats: got %+v, want 1 unhandled (the recent one), 1 pending and 2 parked, kept", st)
		}
		// An id the inbox still holds inserts nothing; a deleted one inserts again.
		var kept []string
		err = s.Transact(ctx, func(r posting.Repos) error {
			for _, id := range []string{old1, old2, old3, recent, parked, done, msg1, msg2} {
				ok, err := r.Inbox.Insert(ctx, pendingMsg(id, disputed, at))
				if err != nil {
					return err
				}
				if !ok {
					kept = append(kept, id)
				}
			}
			return errors.New("roll back the probe")
		})
		if err == nil {
			t.Fatal("the probe's transaction committed")
		}
		if want := []string{recent, parked, done, msg1, msg2}; !slices.Equal(kept, want) {
			t.Errorf("rows kept: got %v, want %v", kept, want)
		}
	})

	t.Run("a failed apply rolls back its savepoint only; a failed batch rolls back all", func(t *testing.T) {
		s := open(t)
		insert(t, s, pendingMsg(msg1, posting.TypePaymentCreated, at), pendingMsg(msg2, posting.TypePaymentCreated, at.Add(time.Second)))
		boom := errors.New("boom")
		c := posting.Claim{Limit: 10, Types: created}
		_, err := s.ClaimPending(ctx, c, func(ctx context.Context, rows []posting.PendingMessage, apply posting.ApplyFunc) (posting.BatchResult, error) {
			if err := apply(ctx, func(r posting.Repos) error { _, err := r.Ledger.Post(ctx, payment(t, msg1), at); return err }); err != nil {
				return posting.BatchResult{}, err
			}
			return posting.BatchResult{}, boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want %v", err, boom)
		}
		if _, err := s.PaymentTransactions(ctx, payment1); !errors.Is(err, ledger.ErrPaymentNotFound) {
			t.Errorf("a failed batch kept its posting: %v", err)
		}
		claimIDs(t, s, c, func(rows []posting.PendingMessage, apply posting.ApplyFunc) posting.BatchResult {
			err := apply(ctx, func(r posting.Repos) error { _, err := r.Ledger.Post(ctx, refund(t, msg2), at); return err })
			if err != nil {
				t.Error(err)
			}
			err = apply(ctx, func(r posting.Repos) error {
				if _, err := r.Ledger.Post(ctx, payment(t, msg1), at); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Errorf("apply: got %v, want %v", err, boom)
			}
			return posting.BatchResult{At: time.Now(), Processed: []posting.Processed{{ID: msg2}}}
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
