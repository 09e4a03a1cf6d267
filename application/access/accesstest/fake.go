// Package accesstest holds the access package's test doubles and the
// contract every access.Store must honour: FakeStore, an in-memory store for
// unit tests, and RunContract, one suite that the fake and the Postgres store
// of adapters/postgres/apikeystore both pass.
package accesstest

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/payments-outbox/payments-outbox/application/access"
)

var _ access.Store = (*FakeStore)(nil)

// FakeStore is an in-memory access.Store. Lookups counts FindByHash calls,
// so a test can tell a cached verification from a looked-up one; Err, when
// set, is what FindByHash returns (an outage).
type FakeStore struct {
	mu      sync.Mutex
	keys    []access.StoredKey
	lookups int
	err     error
}

// NewFakeStore returns an empty FakeStore.
func NewFakeStore() *FakeStore { return &FakeStore{} }

// Lookups returns the number of FindByHash calls so far.
func (s *FakeStore) Lookups() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups
}

// FailLookups makes FindByHash return err (nil: answer again).
func (s *FakeStore) FailLookups(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// Add implements access.Store.
func (s *FakeStore) Add(_ context.Context, k access.StoredKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, old := range s.keys {
		if old.ID == k.ID || bytes.Equal(old.Hash, k.Hash) {
			return access.ErrKeyExists
		}
	}
	k.Hash = slices.Clone(k.Hash)
	s.keys = append(s.keys, k)
	return nil
}

// FindByHash implements access.Store.
func (s *FakeStore) FindByHash(_ context.Context, hash []byte) (access.StoredKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookups++
	if s.err != nil {
		return access.StoredKey{}, s.err
	}
	for _, k := range s.keys {
		if bytes.Equal(k.Hash, hash) {
			return k, nil
		}
	}
	return access.StoredKey{}, access.ErrUnknownKey
}

// List implements access.Store.
func (s *FakeStore) List(context.Context) ([]access.StoredKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.keys), nil
}

// Revoke implements access.Store.
func (s *FakeStore) Revoke(_ context.Context, id string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range s.keys {
		if k.ID == id {
			if k.RevokedAt.IsZero() {
				s.keys[i].RevokedAt = at
			}
			return nil
		}
	}
	return access.ErrUnknownKey
}

// TouchUsed implements access.Store.
func (s *FakeStore) TouchUsed(_ context.Context, used map[string]time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range s.keys {
		if t, ok := used[k.ID]; ok && t.After(k.LastUsedAt) {
			s.keys[i].LastUsedAt = t
		}
	}
	return nil
}
