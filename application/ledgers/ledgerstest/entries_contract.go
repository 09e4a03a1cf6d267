package ledgerstest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// entriesContract is RunContract's part for Reader.AccountEntries: newest
// first, the keyset position, each entry with its transaction, and the
// account's scope.
func entriesContract(t *testing.T, open func(t *testing.T) Store) {
	ctx := context.Background()
	s := open(t)
	// Five payments of mer_c, each in its own inbox transaction, in order;
	// between them one of mer_d, whose entries mer_c's list never shows.
	post := func(n int, merchant string) {
		t.Helper()
		msg := fmt.Sprintf("0190e7a0-0000-7000-8000-%012d", 100+n)
		tx, err := ledger.NewTransfer(ledger.Posting{MessageID: msg, PaymentID: msg, Kind: "payment", Payer: "cus_c", Merchant: merchant,
			Amount: int64(100 * n), Currency: "BRL", OccurredAt: at.Add(time.Duration(n) * time.Second)}, postings(t, "payment"))
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
	for n := 1; n <= 5; n++ {
		post(n, "mer_c")
		if n == 2 {
			post(9, "mer_d")
		}
	}
	merC, _ := ledger.MerchantAccount("mer_c")
	merD, _ := ledger.MerchantAccount("mer_d")

	all, err := s.AccountEntries(ctx, ledgers.EntryQuery{Account: merC, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var amounts []int64
	for i, e := range all {
		amounts = append(amounts, e.Entry.Amount())
		if i > 0 && e.ID >= all[i-1].ID {
			t.Errorf("entry %d has id %d after %d: want newest (greatest id) first", i, e.ID, all[i-1].ID)
		}
		if e.Entry.Account() != merC || e.Transaction.Amount() != e.Entry.Amount() || len(e.Transaction.Entries()) != 2 || !e.Transaction.Balanced() {
			t.Errorf("entry %d: %+v of %+v, want mer_c's leg of a balanced transaction of the same amount", i, e.Entry, e.Transaction)
		}
	}
	if fmt.Sprint(amounts) != "[500 400 300 200 100]" {
		t.Fatalf("mer_c's entries: amounts %v, want [500 400 300 200 100]", amounts)
	}

	page, err := s.AccountEntries(ctx, ledgers.EntryQuery{Account: merC, Limit: 2, After: all[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || page[0].ID != all[2].ID || page[1].ID != all[3].ID {
		t.Errorf("the page after %d: %+v, want entries %d and %d", all[1].ID, page, all[2].ID, all[3].ID)
	}
	last, err := s.AccountEntries(ctx, ledgers.EntryQuery{Account: merC, Limit: 2, After: all[4].ID})
	if err != nil || len(last) != 0 {
		t.Errorf("the page after the oldest: %+v, %v; want none", last, err)
	}

	theirs, err := s.AccountEntries(ctx, ledgers.EntryQuery{Account: merD, Limit: 10})
	if err != nil || len(theirs) != 1 || theirs[0].Entry.Amount() != 900 {
		t.Fatalf("mer_d's entries: %+v, %v; want its one payment", theirs, err)
	}
	if _, err := s.AccountEntries(ctx, ledgers.EntryQuery{Account: merC, Limit: 2, After: theirs[0].ID}); !errors.Is(err, ledgers.ErrUnknownCursor) {
		t.Errorf("another account's entry as the cursor: %v, want ErrUnknownCursor", err)
	}
	if _, err := s.AccountEntries(ctx, ledgers.EntryQuery{Account: merC, Limit: 2, After: all[0].ID + 1000}); !errors.Is(err, ledgers.ErrUnknownCursor) {
		t.Errorf("an id no entry has as the cursor: %v, want ErrUnknownCursor", err)
	}
	nobody, _ := ledger.MerchantAccount("mer_none")
	if es, err := s.AccountEntries(ctx, ledgers.EntryQuery{Account: nobody, Limit: 2}); err != nil || len(es) != 0 {
		t.Errorf("an account without entries: %+v, %v; want none", es, err)
	}
}
