package relaytest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/relay"
)

var _ relay.Store = (*FakeStore)(nil)

// FakePartitions is a FakeStore's partition count unless SetPartitions
// changes it.
const FakePartitions = 8

// FakeStore is an in-memory outbox with the same claim and lease semantics as
// the Postgres one: rows in partitions by relay.PartitionOf; unordered, due
// PENDING rows oldest due first (rows due at the same time in the order they
// were added), rows held by a running claim skipped; ordered, rows in the
// order they were added, one per aggregate, waiting for rows a running claim
// holds. Leases run on the real clock. It is safe for concurrent use.
type FakeStore struct {
	mu         sync.Mutex
	unlocked   *sync.Cond // broadcast when a claim lets its rows go
	now        func() time.Time
	rows       []*FakeRow
	fail       error // ClaimBatch fails with it when set
	partitions int
	members    map[string]time.Time
	leases     []fakeLease
}

type fakeLease struct {
	owner   string
	expires time.Time
}

// FakeRow is one outbox row of a FakeStore.
type FakeRow struct {
	Message     outbox.Message // Attempts counts the failed publishes
	Status      string         // PENDING, PUBLISHED or DEAD
	LastError   string
	NextAttempt time.Time
	locked      bool
}

// NewFakeStore returns an empty outbox of FakePartitions partitions on the
// clock now (time.Now if nil).
func NewFakeStore(now func() time.Time) *FakeStore {
	if now == nil {
		now = time.Now
	}
	s := &FakeStore{now: now, members: map[string]time.Time{}}
	s.unlocked = sync.NewCond(&s.mu)
	s.SetPartitions(FakePartitions)
	return s
}

// SetPartitions changes the partition count and frees every lease, as
// `payments outbox partitions --set` does.
func (s *FakeStore) SetPartitions(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partitions = n
	s.leases = make([]fakeLease, n)
}

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

// FailClaims makes every ClaimBatch fail with err, as a database outage
// would, until it is called with nil.
func (s *FakeStore) FailClaims(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

// ClaimBatch implements relay.Store.
func (s *FakeStore) ClaimBatch(ctx context.Context, c relay.Claim, fn func([]outbox.Message) (relay.BatchResult, error)) (int, error) {
	s.mu.Lock()
	if s.fail != nil {
		s.mu.Unlock()
		return 0, s.fail
	}
	var window []*FakeRow
	if c.Ordered {
		window = s.orderedWindow(c)
	} else {
		window = s.dueRows(c)
	}
	var pub []*FakeRow
	if c.Ordered {
		seen := map[uuid.UUID]bool{}
		for _, r := range window {
			if !seen[r.Message.AggregateID] && !r.NextAttempt.After(s.now()) {
				pub = append(pub, r)
			}
			seen[r.Message.AggregateID] = true
		}
	} else {
		pub = window
	}
	msgs := make([]outbox.Message, len(pub))
	for _, r := range window {
		r.locked = true
	}
	for i, r := range pub {
		msgs[i] = r.Message
	}
	s.mu.Unlock()
	if len(msgs) == 0 {
		s.unlock(window)
		return len(window), nil
	}

	out, err := fn(msgs)

	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.unlocked.Broadcast()
	for _, r := range window {
		r.locked = false
	}
	if err != nil {
		return 0, err
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

func (s *FakeStore) unlock(rows []*FakeRow) {
	s.mu.Lock()
	for _, r := range rows {
		r.locked = false
	}
	s.mu.Unlock()
	s.unlocked.Broadcast()
}

// inClaim reports whether r is in one of the partitions c names whose
// lease c.Owner holds.
func (s *FakeStore) inClaim(r *FakeRow, c relay.Claim) bool {
	if c.Owned == nil {
		return true
	}
	p := relay.PartitionOf(r.Message.AggregateID, c.Partitions)
	if _, found := slices.BinarySearch(c.Owned, p); !found {
		return false
	}
	return p < len(s.leases) && s.leases[p].owner == c.Owner && s.leases[p].expires.After(time.Now())
}

func (s *FakeStore) dueRows(c relay.Claim) []*FakeRow {
	var due []*FakeRow
	for _, r := range s.rows {
		if r.Status == "PENDING" && !r.locked && !r.NextAttempt.After(s.now()) && s.inClaim(r, c) {
			due = append(due, r)
		}
	}
	slices.SortStableFunc(due, func(a, b *FakeRow) int { return a.NextAttempt.Compare(b.NextAttempt) })
	if len(due) > c.Limit {
		due = due[:c.Limit]
	}
	return due
}

// orderedWindow returns the first c.Limit PENDING rows in the order they
// were added, leaving out aggregates with a row waiting for its retry, and
// waits while any of them is held by another claim. s.mu is held.
func (s *FakeStore) orderedWindow(c relay.Claim) []*FakeRow {
	for {
		blocked := map[uuid.UUID]bool{}
		for _, r := range s.rows {
			if r.Status == "PENDING" && r.NextAttempt.After(s.now()) && s.inClaim(r, c) {
				blocked[r.Message.AggregateID] = true
			}
		}
		var window []*FakeRow
		held := false
		for _, r := range s.rows {
			if len(window) == c.Limit {
				break
			}
			if r.Status != "PENDING" || blocked[r.Message.AggregateID] || !s.inClaim(r, c) {
				continue
			}
			held = held || r.locked
			window = append(window, r)
		}
		if !held {
			return window
		}
		s.unlocked.Wait()
	}
}

// Heartbeat implements relay.Store.
func (s *FakeStore) Heartbeat(ctx context.Context, owner string, ttl time.Duration) (relay.Assignment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return relay.Assignment{}, s.fail
	}
	now := time.Now()
	s.members[owner] = now.Add(ttl)
	var alive []string
	for m, exp := range s.members {
		if exp.After(now) {
			alive = append(alive, m)
		} else {
			delete(s.members, m)
		}
	}
	share := relay.FairShare(s.partitions, alive, owner)
	a := relay.Assignment{Partitions: s.partitions, Replicas: len(alive)}
	var mine []int
	for p := range s.leases {
		if s.leases[p].owner == owner && s.leases[p].expires.After(now) {
			mine = append(mine, p)
		}
	}
	for len(mine) > share {
		p := mine[len(mine)-1]
		mine = mine[:len(mine)-1]
		s.leases[p] = fakeLease{}
		a.Released++
	}
	for p := range s.leases {
		if len(mine) >= share {
			break
		}
		l := s.leases[p]
		if l.owner != owner && (l.owner == "" || !l.expires.After(now)) {
			mine = append(mine, p)
			a.Took++
		}
	}
	slices.Sort(mine)
	for _, p := range mine {
		s.leases[p] = fakeLease{owner: owner, expires: now.Add(ttl)}
	}
	a.Owned = mine
	return a, nil
}

// Release implements relay.Store.
func (s *FakeStore) Release(ctx context.Context, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.members, owner)
	for p := range s.leases {
		if s.leases[p].owner == owner {
			s.leases[p] = fakeLease{}
		}
	}
	return nil
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
