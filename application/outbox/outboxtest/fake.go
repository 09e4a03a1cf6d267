// Package outboxtest holds the relay's test double and the contract every
// outbox.Store must honour: FakeStore, an in-memory outbox for the relay's
// unit tests, and RunContract, one suite that runs against the fake and the
// Postgres store alike. Because the fake passes it, tests written with the
// fake say something true about production.
package outboxtest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
)

var _ outbox.Store = (*FakeStore)(nil)

// FakeStore is an in-memory outbox with the claim of the Postgres one: due
// PENDING rows, oldest due first (rows due at the same time in the order
// they were added), skipping rows a running claim holds. It is safe for
// concurrent use.
type FakeStore struct {
	mu       sync.Mutex
	unlocked *sync.Cond // broadcast when a claim lets its rows go
	now      func() time.Time
	rows     []*FakeRow
	fail     error // claims fail with it when set
}

// FakeRow is one outbox row of a FakeStore.
type FakeRow struct {
	Message     outbox.Message // Attempts counts the failed publishes
	Status      string         // PENDING, PUBLISHED or DEAD
	LastError   string
	NextAttempt time.Time
	// Locked is set while a claim holds the row.
	Locked bool
}

// NewFakeStore returns an empty outbox on the clock now (time.Now if nil).
func NewFakeStore(now func() time.Time) *FakeStore {
	if now == nil {
		now = time.Now
	}
	s := &FakeStore{now: now}
	s.unlocked = sync.NewCond(&s.mu)
	return s
}

// Now is the store's clock.
func (s *FakeStore) Now() time.Time { return s.now() }

// Add commits n PENDING rows of type typ, each of its own aggregate, due now,
// as the write side would, and returns their ids in the order they will be
// claimed.
func (s *FakeStore) Add(n int, typ string) []uuid.UUID {
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = s.AddFor(uuid.New(), 1, typ)[0]
	}
	return ids
}

// AddFor commits n PENDING rows of type typ of one aggregate, due now, in
// order, and returns their ids.
func (s *FakeStore) AddFor(aggregate uuid.UUID, n int, typ string) []uuid.UUID {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.New()
		s.rows = append(s.rows, &FakeRow{
			Message:     outbox.Message{ID: ids[i], AggregateID: aggregate, Type: typ, Payload: []byte(`{}`), CreatedAt: s.now()},
			Status:      "PENDING",
			NextAttempt: s.now(),
		})
	}
	return ids
}

// FailClaims makes every claim fail with err, as a database outage would,
// until it is called with nil.
func (s *FakeStore) FailClaims(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

// Claim implements outbox.Store.
func (s *FakeStore) Claim(ctx context.Context, limit int, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	return s.ClaimRows(ctx, func(rows []*FakeRow, now time.Time) (window, publishable []*FakeRow, wait bool) {
		var due []*FakeRow
		for _, r := range rows {
			if r.Status == "PENDING" && !r.Locked && !r.NextAttempt.After(now) {
				due = append(due, r)
			}
		}
		slices.SortStableFunc(due, func(a, b *FakeRow) int { return a.NextAttempt.Compare(b.NextAttempt) })
		if len(due) > limit {
			due = due[:limit]
		}
		return due, due, false
	}, publish)
}

// ClaimRows is the claim transaction every claim of the fake is: under the
// store's lock, pick chooses the rows to lock (window) and, of those, the
// ones to publish, or asks to wait until a running claim lets its rows go
// and to pick again. The rows are held while publish runs; then the Result
// is written, unless ctx's deadline passed first. ctx's cancellation stops
// the claim only while it waits, as outbox.Store says. It returns how many
// rows it locked. A fake of another claim (ordered mode's) is a pick.
func (s *FakeStore) ClaimRows(ctx context.Context, pick func(rows []*FakeRow, now time.Time) (window, publishable []*FakeRow, wait bool),
	publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	s.mu.Lock()
	var window, pub []*FakeRow
	for {
		if err := s.fail; err != nil {
			s.mu.Unlock()
			return 0, err
		}
		if err := ctx.Err(); err != nil {
			s.mu.Unlock()
			return 0, err
		}
		var wait bool
		if window, pub, wait = pick(s.rows, s.now()); !wait {
			break
		}
		s.unlocked.Wait()
	}
	for _, r := range window {
		r.Locked = true
	}
	msgs := make([]outbox.Message, len(pub))
	for i, r := range pub {
		msgs[i] = r.Message
	}
	s.mu.Unlock()

	var out outbox.Result
	if len(msgs) > 0 {
		bctx, cancel := withoutCancel(ctx)
		defer cancel()
		out = publish(bctx, msgs)
		if err := bctx.Err(); err != nil { // past the deadline: the transaction rolls back
			s.unlock(window)
			return 0, err
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.unlocked.Broadcast()
	for _, r := range window {
		r.Locked = false
	}
	byID := map[uuid.UUID]*FakeRow{}
	for _, r := range pub {
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
	return len(window), nil
}

// withoutCancel is ctx with its values and deadline but not its
// cancellation: what a claim runs on once it holds rows.
func withoutCancel(ctx context.Context) (context.Context, context.CancelFunc) {
	detached := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(detached, d)
	}
	return detached, func() {}
}

func (s *FakeStore) unlock(rows []*FakeRow) {
	s.mu.Lock()
	for _, r := range rows {
		r.Locked = false
	}
	s.mu.Unlock()
	s.unlocked.Broadcast()
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
