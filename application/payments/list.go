package payments

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// The size of a page of a list: DefaultListLimit when the client names
// none, at most MaxListLimit, so that one request's cost is bounded however
// many payments a merchant has.
const (
	DefaultListLimit = 10
	MaxListLimit     = 100
)

// Errors of listing, matched with errors.Is.
var (
	// ErrInvalidListQuery means a parameter of a list breaks a rule (a limit
	// out of range, both cursors, an empty time range, a merchant the key
	// may not list); the error's text says which.
	ErrInvalidListQuery = errors.New("invalid list query")
	// ErrUnknownCursor means the payment a cursor names does not exist or is
	// not among the payments listed (another merchant's): the two are not
	// told apart, as Get does not tell them apart.
	ErrUnknownCursor = errors.New("the cursor names no payment of this list")
)

// ListPayments is the input of List: one page of a merchant's payments,
// newest first.
type ListPayments struct {
	// Principal is who asks. As for Create, a merchant lists its own
	// payments (an empty MerchantID means its own, another is refused) and
	// the platform names the merchant.
	Principal  access.Principal
	MerchantID string
	// Limit is the page's size, 1 to MaxListLimit; 0 means DefaultListLimit.
	Limit int
	// StartingAfter, when set, asks for the page after that payment (older
	// ones); EndingBefore for the page before it (newer ones). At most one
	// may be set: each is the id of a payment of the list, such as the last
	// (or the first) of the page a client already has.
	StartingAfter payment.ID
	EndingBefore  payment.ID
	// Status, when set, keeps the payments in that status only.
	Status payment.Status
	// CreatedGTE and CreatedLT, when not zero, keep the payments created at
	// or after CreatedGTE and before CreatedLT.
	CreatedGTE, CreatedLT time.Time
}

// Page is one page of a list, newest first. HasMore reports whether the
// list goes on past the page in the direction it was asked for: older
// payments after it, or, for an EndingBefore page, newer ones before it.
type Page struct {
	Payments []*payment.Payment
	HasMore  bool
}

// PaymentQuery is what Repository.List reads: a merchant's payments matching
// the filters, newest first, from a keyset position. Limit is how many to
// return at most.
type PaymentQuery struct {
	MerchantID string
	Limit      int
	// After, when set, keeps the payments older than it; Before, the ones
	// newer than it, of which List returns the Limit nearest to it.
	After, Before *Position
	Status        payment.Status
	// CreatedGTE and CreatedLT bound created_at when not zero.
	CreatedGTE, CreatedLT time.Time
}

// Position is a place in a list's order: created_at, then id, both
// descending. Ids break the ties of payments created in the same
// microsecond, so the order is total and a page never repeats or skips one.
type Position struct {
	CreatedAt time.Time
	ID        payment.ID
}

// PositionOf is p's place in a list's order.
func PositionOf(p *payment.Payment) Position {
	return Position{CreatedAt: p.CreatedAt(), ID: p.ID()}
}

// Older reports whether p comes after q in a list's order (newest first).
func (p Position) Older(q Position) bool {
	if !p.CreatedAt.Equal(q.CreatedAt) {
		return p.CreatedAt.Before(q.CreatedAt)
	}
	return p.ID < q.ID
}

// List returns one page of a merchant's payments, newest first. The page is
// found by its cursor's position (keyset pagination), never by an offset:
// its cost does not grow with how far the client has paged, and a payment
// created while a client pages does not shift the pages it has not read yet.
// Errors: ErrInvalidListQuery, ErrUnknownCursor, access.ErrUnauthenticated,
// dependency.ErrUnavailable.
func (s *Service) List(ctx context.Context, l ListPayments) (Page, error) {
	if !l.Principal.Valid() {
		return Page{}, access.ErrUnauthenticated
	}
	q, err := s.listQuery(ctx, l)
	if err != nil {
		return Page{}, err
	}
	want := q.Limit
	q.Limit++ // one more than the page tells whether the list goes on
	ps, err := s.repo.List(ctx, q)
	if err != nil {
		return Page{}, err
	}
	if len(ps) <= want {
		return Page{Payments: ps}, nil
	}
	if q.Before != nil {
		// The Limit nearest the cursor are the last ones: the extra is the
		// newest.
		return Page{Payments: ps[1:], HasMore: true}, nil
	}
	return Page{Payments: ps[:want], HasMore: true}, nil
}

// listQuery checks l and resolves its cursor into a position.
func (s *Service) listQuery(ctx context.Context, l ListPayments) (PaymentQuery, error) {
	invalid := func(detail string) error { return fmt.Errorf("%w: %s", ErrInvalidListQuery, detail) }
	merchant := l.MerchantID
	switch {
	case l.Principal.IsPlatform() && merchant == "":
		return PaymentQuery{}, invalid("merchant_id is required with the platform's key")
	case merchant != "" && !payment.ValidPartyID(merchant):
		// The platform acts for any merchant: without this, a NUL would
		// reach the database, which cannot hold it, and answer 500.
		return PaymentQuery{}, invalid(fmt.Sprintf("merchant_id must be UTF-8 text of at most %d bytes, without control characters", payment.MaxPartyIDLen))
	case !l.Principal.IsPlatform() && merchant == "":
		merchant = l.Principal.Merchant()
	case !l.Principal.ActsFor(merchant):
		return PaymentQuery{}, invalid("merchant_id must be the API key's own merchant, or left out")
	}
	switch {
	case l.Limit == 0:
		l.Limit = DefaultListLimit
	case l.Limit < 1 || l.Limit > MaxListLimit:
		return PaymentQuery{}, invalid(fmt.Sprintf("limit must be from 1 to %d", MaxListLimit))
	}
	if l.StartingAfter != "" && l.EndingBefore != "" {
		return PaymentQuery{}, invalid("starting_after and ending_before cannot both be given")
	}
	if !l.CreatedGTE.IsZero() && !l.CreatedLT.IsZero() && !l.CreatedGTE.Before(l.CreatedLT) {
		return PaymentQuery{}, invalid("created_gte must be before created_lt")
	}
	q := PaymentQuery{MerchantID: merchant, Limit: l.Limit, Status: l.Status, CreatedGTE: ceilMicro(l.CreatedGTE), CreatedLT: ceilMicro(l.CreatedLT)}
	var err error
	if l.StartingAfter != "" {
		q.After, err = s.cursor(ctx, merchant, l.StartingAfter)
	} else if l.EndingBefore != "" {
		q.Before, err = s.cursor(ctx, merchant, l.EndingBefore)
	}
	return q, err
}

// cursor is the position of payment id in merchant's list. A payment that
// does not exist and another merchant's are the same ErrUnknownCursor, so a
// cursor tells a client nothing of payments it may not see.
func (s *Service) cursor(ctx context.Context, merchant string, id payment.ID) (*Position, error) {
	p, err := s.repo.Get(ctx, id)
	if errors.Is(err, payment.ErrNotFound) || err == nil && p.MerchantID() != merchant {
		return nil, fmt.Errorf("%w: %s", ErrUnknownCursor, id)
	}
	if err != nil {
		return nil, err
	}
	pos := PositionOf(p)
	return &pos, nil
}

// ceilMicro is t rounded up to the microsecond. Payments are created at
// whole microseconds (NewService), so for every created_at c, c >= t and
// c < t hold exactly when they hold of ceilMicro(t): a bound of finer
// precision means the same to every store, where Postgres would round it to
// the nearest microsecond, either way.
func ceilMicro(t time.Time) time.Time {
	if r := t.Truncate(time.Microsecond); !r.Equal(t) {
		return r.Add(time.Microsecond)
	}
	return t
}
