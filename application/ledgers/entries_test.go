package ledgers_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/ledgers/ledgerstest"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

func TestAccountEntriesPages(t *testing.T) {
	ctx := context.Background()
	svc := newService(ledgerstest.NewFakeStore())
	for n := 1; n <= 3; n++ {
		body := createdOf(fmt.Sprintf("0190e7a0-0000-7000-8000-%012d", n), fmt.Sprintf("0190e7a0-0000-7000-8000-%012d", 100+n), int64(n))
		if _, err := svc.Apply(ctx, body); err != nil {
			t.Fatal(err)
		}
	}
	first, err := svc.AccountEntries(ctx, ledgers.ListEntries{Account: "merchant:mer_1", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Entries) != 2 || first.Entries[0].Entry.Amount() != 3 || first.Entries[1].Entry.Amount() != 2 || !first.HasMore {
		t.Fatalf("first page: %+v, want the entries of 3 and 2, and more", first)
	}
	next, err := svc.AccountEntries(ctx, ledgers.ListEntries{Account: "merchant:mer_1", Limit: 2, StartingAfter: first.Entries[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Entries) != 1 || next.Entries[0].Entry.Amount() != 1 || next.HasMore {
		t.Fatalf("last page: %+v, want the entry of 1, and no more", next)
	}
	all, err := svc.AccountEntries(ctx, ledgers.ListEntries{Account: "payer:mer_1:cus_1"})
	if err != nil || len(all.Entries) != 3 || all.HasMore || all.Entries[0].Entry.Amount() != -3 {
		t.Errorf("the payer's default page: %+v, %v; want its 3 entries", all, err)
	}

	for _, c := range []struct {
		name string
		l    ledgers.ListEntries
		want error
	}{
		{"not an account", ledgers.ListEntries{Account: "mer_1"}, ledger.ErrInvalidAccount},
		{"an account without entries", ledgers.ListEntries{Account: "merchant:nobody"}, ledger.ErrAccountNotFound},
		{"a limit under 1", ledgers.ListEntries{Account: "merchant:mer_1", Limit: -1}, ledgers.ErrInvalidListQuery},
		{"a limit over the maximum", ledgers.ListEntries{Account: "merchant:mer_1", Limit: ledgers.MaxListLimit + 1}, ledgers.ErrInvalidListQuery},
		{"another account's entry as the cursor", ledgers.ListEntries{Account: "merchant:mer_1", StartingAfter: all.Entries[0].ID}, ledgers.ErrUnknownCursor},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := svc.AccountEntries(ctx, c.l); !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
}
