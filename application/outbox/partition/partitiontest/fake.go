// Package partitiontest holds ordered mode's test double and the contract
// every partition.Store must honour: FakeStore, an in-memory outbox with
// partitions and leases, and RunContract, one suite that runs against the
// fake and the Postgres store alike.
package partitiontest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/outboxtest"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
)

var _ partition.Store = (*FakeStore)(nil)

// FakePartitions is a FakeStore's partition count.
const FakePartitions = 8

// FakeStore is an outboxtest.FakeStore (rows, Add, Row, Count and the
// unordered Claim) with the ordered claim and the leases of the Postgres
// store: rows in partitions by partition.Of; ordered, rows in the order
// they were added, one per aggregate, waiting for rows a running claim
// holds, from the partitions the claim names whose lease its owner holds,
// in partition order.
// Leases run on the real clock. It is safe for concurrent use.
type FakeStore struct {
	*outboxtest.FakeStore

	mu      sync.Mutex
	fail    error
	members map[string]time.Time
	leases  []fakeLease
}

type fakeLease struct {
	owner   string
	expires time.Time
}

// NewFakeStore returns an empty outbox of FakePartitions partitions on the
// clock now (time.Now if nil).
func NewFakeStore(now func() time.Time) *FakeStore {
	return &FakeStore{FakeStore: outboxtest.NewFakeStore(now), members: map[string]time.Time{}, leases: make([]fakeLease, FakePartitions)}
}

// FailClaims makes every claim and heartbeat fail with err, as a database
// outage would, until it is called with nil.
func (s *FakeStore) FailClaims(err error) {
	s.FakeStore.FailClaims(err)
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

// ClaimInOrder implements partition.Store.
func (s *FakeStore) ClaimInOrder(ctx context.Context, c partition.Claim, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	s.mu.Lock()
	held := make(map[int]bool, len(c.Owned))
	for _, p := range c.Owned {
		if p < len(s.leases) && s.leases[p].owner == c.Owner && s.leases[p].expires.After(time.Now()) {
			held[p] = true
		}
	}
	s.mu.Unlock()
	mine := func(r *outboxtest.FakeRow) bool {
		return held[partition.Of(r.Message.AggregateID, c.Partitions)]
	}
	return s.ClaimRows(ctx, func(rows []*outboxtest.FakeRow, now time.Time) (window, pub []*outboxtest.FakeRow, wait bool) {
		blocked := map[uuid.UUID]bool{}
		for _, r := range rows {
			if r.Status == "PENDING" && r.NextAttempt.After(now) && mine(r) {
				blocked[r.Message.AggregateID] = true
			}
		}
		// In partition order, and in each in write order, as the Postgres
		// claim's ORDER BY outbox_partition(…), seq.
		inOrder := slices.Clone(rows)
		slices.SortStableFunc(inOrder, func(a, b *outboxtest.FakeRow) int {
			return partition.Of(a.Message.AggregateID, c.Partitions) - partition.Of(b.Message.AggregateID, c.Partitions)
		})
		for _, r := range inOrder {
			if len(window) == c.Limit {
				break
			}
			if r.Status != "PENDING" || blocked[r.Message.AggregateID] || !mine(r) {
				continue
			}
			if r.Locked {
				return nil, nil, true // wait for the claim that holds it
			}
			window = append(window, r)
		}
		seen := map[uuid.UUID]bool{}
		for _, r := range window {
			if !seen[r.Message.AggregateID] && !r.NextAttempt.After(now) {
				pub = append(pub, r)
			}
			seen[r.Message.AggregateID] = true
		}
		return window, pub, false
	}, publish)
}

// Heartbeat implements partition.Store.
func (s *FakeStore) Heartbeat(_ context.Context, owner string, ttl time.Duration) (partition.Assignment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return partition.Assignment{}, s.fail
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
	share := partition.FairShare(len(s.leases), alive, owner)
	a := partition.Assignment{Partitions: len(s.leases), Replicas: len(alive)}
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

// Release implements partition.Store.
func (s *FakeStore) Release(_ context.Context, owner string) error {
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
