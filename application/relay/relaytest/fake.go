package relaytest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/relay"
)

var _ relay.Store = (*FakeStore)(nil)

// FakeStore is an in-memory outbox with the same claim semantics as the
// Postgres one: due PENDING rows, oldest due first (rows due at the same time in
// the order they were added), rows held by a running claim skipped. It is safe
// for concurrent use.
type FakeStore struct {
	mu   sync.Mutex
	now  func() time.Time
	rows []*FakeRow
	fail error // ClaimBatch fails with it when set
}

// FakeRow is one outbox row of a FakeStore.
type FakeRow struct {
	Message     relay.Message // Attempts counts the failed publishes
	Status      string        // PENDING, PUBLISHED or DEAD
	LastError   string
	NextAttempt time.Time
	locked      bool
}

// NewFakeStore returns an empty outbox on the clock now (time.Now if nil).
func NewFakeStore(now func() time.Time) *FakeStore {
	if now == nil {
		now = time.Now
	}
	return &FakeStore{now: now}
}

// Add commits n PENDING rows of type typ, due now, as the write side would,
// and returns their ids in the order they will be claimed.
func (s *FakeStore) Add(n int, typ string) []uuid.UUID {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.New()
		s.rows = append(s.rows, &FakeRow{
			Message:     relay.Message{ID: ids[i], Type: typ, Payload: []byte(`{}`), CreatedAt: s.now()},
			Status:      "PENDING",
			NextAttempt: s.now(),
		})
	}
	return ids
}

// FailClaims makes every ClaimBatch fail with err, as a database outage
// would, until it is called with nil.
func (s *FakeStore) FailClaims(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

// ClaimBatch implements relay.Store.
func (s *FakeStore) ClaimBatch(ctx context.Context, limit int, fn func([]relay.Message) (relay.Outcome, error)) (int, error) {
	s.mu.Lock()
	if s.fail != nil {
		s.mu.Unlock()
		return 0, s.fail
	}
	var due []*FakeRow
	for _, r := range s.rows {
		if r.Status == "PENDING" && !r.locked && !r.NextAttempt.After(s.now()) {
			due = append(due, r)
		}
	}
	slices.SortStableFunc(due, func(a, b *FakeRow) int { return a.NextAttempt.Compare(b.NextAttempt) })
	if len(due) > limit {
		due = due[:limit]
	}
	msgs := make([]relay.Message, len(due))
	for i, r := range due {
		r.locked = true
		msgs[i] = r.Message
	}
	s.mu.Unlock()
	if len(msgs) == 0 {
		return 0, nil
	}

	out, err := fn(msgs)

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range due {
		r.locked = false
	}
	if err != nil {
		return 0, err
	}
	byID := map[uuid.UUID]*FakeRow{}
	for _, r := range due {
		byID[r.Message.ID] = r
	}
	for _, id := range out.Published {
		byID[id].Status = "PUBLISHED"
	}
	for _, f := range out.Retry {
		r := byID[f.ID]
		r.Message.Attempts++
		r.LastError, r.NextAttempt = f.Error, f.NextAttemptAt
	}
	for _, f := range out.Dead {
		r := byID[f.ID]
		r.Message.Attempts++
		r.LastError, r.Status = f.Error, "DEAD"
	}
	return len(msgs), nil
}

// Row returns a copy of row id; the zero FakeRow if there is none.
func (s *FakeStore) Row(id uuid.UUID) FakeRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rows {
		if r.Message.ID == id {
			return *r
		}
	}
	return FakeRow{}
}

// Count returns how many rows have status.
func (s *FakeStore) Count(status string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.rows {
		if r.Status == status {
			n++
		}
	}
	return n
}
