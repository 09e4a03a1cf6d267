// Package paymentstest holds the payments package's test doubles and the
// contract every payments.Repository must honour: FakeRepository, an in-memory
// repository for the use cases' unit tests, and RunContract, one suite that the
// fake and the Postgres repository of adapters/postgres/paymentstore both pass.
package paymentstest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

var (
	_ payments.Repository            = (*FakeRepository)(nil)
	_ payments.ExpiredAuthorizations = (*FakeRepository)(nil).ExpiredAuthorizations
)

// FakeRepository is an in-memory payments.Repository. One mutex serialises every
// call, which gives the same isolation as the Postgres row lock. Its outbox
// holds what the Postgres outbox would: every committed message, in commit
// order.
type FakeRepository struct {
	mu       sync.Mutex
	payments map[payment.ID]payment.Snapshot
	keys     map[string]storedKey
	outbox   []outbox.Message
}

type storedKey struct {
	fingerprint string
	payment     payment.Snapshot
	refund      *payment.Refund
}

// NewFakeRepository returns an empty FakeRepository.
func NewFakeRepository() *FakeRepository {
	return &FakeRepository{payments: map[payment.ID]payment.Snapshot{}, keys: map[string]storedKey{}}
}

// Outbox returns every committed message so far, in commit order.
func (r *FakeRepository) Outbox() []outbox.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]outbox.Message(nil), r.outbox...)
}

// Create implements payments.Repository.
func (r *FakeRepository) Create(_ context.Context, p *payment.Payment, msgs []outbox.Message, key *idempotency.Key) (payments.Committed, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if out, done, err := r.replay(key); done {
		return out, err
	}
	r.payments[p.ID()] = p.Snapshot()
	r.commit(p, payments.Change{Outbox: msgs}, key)
	return payments.Committed{Payment: p}, nil
}

// Update implements payments.Repository.
func (r *FakeRepository) Update(_ context.Context, id payment.ID, key *idempotency.Key, fn func(*payment.Payment) (payments.Change, error)) (payments.Committed, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if out, done, err := r.replay(key); done {
		return out, err
	}
	s, ok := r.payments[id]
	if !ok {
		return payments.Committed{}, payment.ErrNotFound
	}
	p, err := payment.Rehydrate(s) // a copy: a failing fn leaves the stored state alone
	if err != nil {
		return payments.Committed{}, err
	}
	change, err := fn(p)
	if err != nil {
		return payments.Committed{}, err
	}
	r.payments[id] = p.Snapshot()
	r.commit(p, change, key)
	return payments.Committed{Payment: p, Refund: change.Refund}, nil
}

// commit appends c's messages to the outbox and stores key's result.
func (r *FakeRepository) commit(p *payment.Payment, c payments.Change, key *idempotency.Key) {
	r.outbox = append(r.outbox, c.Outbox...)
	if key != nil {
		r.keys[key.Scoped()] = storedKey{fingerprint: key.Fingerprint, payment: p.Snapshot(), refund: c.Refund}
	}
}

func (r *FakeRepository) replay(key *idempotency.Key) (payments.Committed, bool, error) {
	if key == nil {
		return payments.Committed{}, false, nil
	}
	k, ok := r.keys[key.Scoped()]
	if !ok {
		return payments.Committed{}, false, nil
	}
	if k.fingerprint != key.Fingerprint {
		return payments.Committed{}, true, idempotency.ErrKeyReused
	}
	p, err := payment.Rehydrate(k.payment)
	if err != nil {
		return payments.Committed{}, true, err
	}
	return payments.Committed{Payment: p, Refund: k.refund, Replayed: true}, true, nil
}

// Get implements payments.Repository.
func (r *FakeRepository) Get(_ context.Context, id payment.ID) (*payment.Payment, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.payments[id]
	if !ok {
		return nil, payment.ErrNotFound
	}
	return payment.Rehydrate(s)
}

// ExpiredAuthorizations is the fake's payments.ExpiredAuthorizations.
func (r *FakeRepository) ExpiredAuthorizations(_ context.Context, now time.Time, limit int) ([]payment.ID, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var expired []payment.Snapshot
	for _, s := range r.payments {
		if s.Status == payment.StatusAuthorized && !now.Before(s.CaptureBefore) {
			expired = append(expired, s)
		}
	}
	slices.SortFunc(expired, func(a, b payment.Snapshot) int { return a.CaptureBefore.Compare(b.CaptureBefore) })
	ids := make([]payment.ID, 0, min(limit, len(expired)))
	for _, s := range expired[:min(limit, len(expired))] {
		ids = append(ids, s.ID)
	}
	return ids, nil
}
