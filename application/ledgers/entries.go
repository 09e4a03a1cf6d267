package ledgers

import (
	"context"
	"errors"
	"fmt"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// The size of a page of an account's entries: DefaultListLimit when the
// client names none, at most MaxListLimit, so that one request's cost is
// bounded however long the account's history.
const (
	DefaultListLimit = 10
	MaxListLimit     = 100
)

// Errors of listing an account's entries, matched with errors.Is.
var (
	// ErrInvalidListQuery means a parameter of the list breaks a rule (a
	// limit out of range); the error's text says which.
	ErrInvalidListQuery = errors.New("invalid list query")
	// ErrUnknownCursor means the entry a cursor names is not an entry of the
	// account listed: none has that id, or another account's has.
	ErrUnknownCursor = errors.New("the cursor names no entry of this account")
)

// AccountEntry is one entry of an account, as its list shows it: the leg
// posted to the account and the transaction it is a leg of, with every leg.
// ID is the entry's place in the ledger: later postings have greater ids,
// and a list is ordered by it.
type AccountEntry struct {
	ID          int64
	Entry       ledger.Entry
	Transaction ledger.Transaction
}

// EntryQuery is what Reader.AccountEntries reads: at most Limit of the
// account's entries, newest (greatest id) first, those before After when it
// is not 0.
type EntryQuery struct {
	Account ledger.AccountID
	Limit   int
	After   int64
}

// ListEntries is the input of AccountEntries: one page of an account's
// entries, newest first.
type ListEntries struct {
	// Account is the account's canonical name (ledger.ParseAccountID).
	Account string
	// Limit is the page's size, 1 to MaxListLimit; 0 means DefaultListLimit.
	Limit int
	// StartingAfter, when not 0, asks for the page after that entry (older
	// ones): the id of the last entry of the page the client has.
	StartingAfter int64
}

// EntriesPage is one page of an account's entries, newest first; HasMore
// reports whether older entries follow it.
type EntriesPage struct {
	Account ledger.AccountID
	Entries []AccountEntry
	HasMore bool
}

// AccountEntries returns one page of an account's entries, newest first,
// found by its cursor's position (keyset pagination), never by an offset:
// its cost does not grow with how far the client has paged. An account with
// no entry at all is ledger.ErrAccountNotFound, as for Balances. Errors:
// ledger.ErrInvalidAccount, ledger.ErrAccountNotFound, ErrInvalidListQuery,
// ErrUnknownCursor, dependency.ErrUnavailable.
func (s *Service) AccountEntries(ctx context.Context, l ListEntries) (EntriesPage, error) {
	account, err := ledger.ParseAccountID(l.Account)
	if err != nil {
		return EntriesPage{}, err
	}
	switch {
	case l.Limit == 0:
		l.Limit = DefaultListLimit
	case l.Limit < 1 || l.Limit > MaxListLimit:
		return EntriesPage{}, fmt.Errorf("%w: limit must be from 1 to %d", ErrInvalidListQuery, MaxListLimit)
	}
	if l.StartingAfter < 0 {
		return EntriesPage{}, fmt.Errorf("%w: %d", ErrUnknownCursor, l.StartingAfter)
	}
	// One more than the page tells whether the list goes on.
	es, err := s.reader.AccountEntries(ctx, EntryQuery{Account: account, Limit: l.Limit + 1, After: l.StartingAfter})
	if err != nil {
		return EntriesPage{}, err
	}
	if len(es) == 0 && l.StartingAfter == 0 {
		return EntriesPage{}, fmt.Errorf("%w: %s", ledger.ErrAccountNotFound, account)
	}
	page := EntriesPage{Account: account, Entries: es}
	if len(es) > l.Limit {
		page.Entries, page.HasMore = es[:l.Limit], true
	}
	return page, nil
}
