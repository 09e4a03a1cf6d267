package bookkeeping_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/payments-outbox/payments-outbox/application/bookkeeping"
	"github.com/payments-outbox/payments-outbox/application/bookkeeping/bookkeepingtest"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

func TestAccountEntriesPages(t *testing.T) {
	ctx := context.Background()
	svc := newService(bookkeepingtest.NewFakeStore())
	for n := 1; n <= 3; n++ {
		body := createdOf(fmt.Sprintf("0190e7a0-0000-7000-8000-%012d", n), fmt.Sprintf("0190e7a0-0000-7000-8000-%012d", 100+n), int64(n))
		if _, err := svc.Apply(ctx, body); err != nil {
			t.Fatal(err)
		}
	}
	first, err := svc.AccountEntries(ctx, bookkeeping.ListEntries{Account: "merchant:mer_1", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Entries) != 2 || first.Entries[0].Entry.Amount() != 3 || first.Entries[1].Entry.Amount() != 2 || !first.HasMore {
		t.Fatalf("first page: %+v, want the entries of 3 and 2, and more", first)
	}
	next, err := svc.AccountEntries(ctx, bookkeeping.ListEntries{Account: "merchant:mer_1", Limit: 2, StartingAfter: first.Entries[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Entries) != 1 || next.Entries[0].Entry.Amount() != 1 || next.HasMore {
		t.Fatalf("last page: %+v, want the entry of 1, and no more", next)
	}
	all, err := svc.AccountEntries(ctx, bookkeeping.ListEntries{Account: "payer:mer_1:cus_1"})
	if err != nil || len(all.Entries) != 3 || all.HasMore || all.Entries[0].Entry.Amount() != -3 {
		t.Errorf("the payer's default page: %+v, %v; want its 3 entries", all, err)
	}

	for _, c := range []struct {
		name string
		l    bookkeeping.ListEntries
		want error
	}{
		{"not an account", bookkeeping.ListEntries{Account: "mer_1"}, ledger.ErrInvalidAccount},
		{"an account without entries", bookkeeping.ListEntries{Account: "merchant:nobody"}, ledger.ErrAccountNotFound},
		{"a limit under 1", bookkeeping.ListEntries{Account: "merchant:mer_1", Limit: -1}, bookkeeping.ErrInvalidListQuery},
		{"a limit over the maximum", bookkeeping.ListEntries{Account: "merchant:mer_1", Limit: bookkeeping.MaxListLimit + 1}, bookkeeping.ErrInvalidListQuery},
		{"another account's entry as the cursor", bookkeeping.ListEntries{Account: "merchant:mer_1", StartingAfter: all.Entries[0].ID}, bookkeeping.ErrUnknownCursor},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := svc.AccountEntries(ctx, c.l); !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
}
