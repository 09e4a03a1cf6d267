// Package partition is the outbox relay's ordered mode: each aggregate's
// events are published in the order they were written, by replicas that
// divide the outbox between them.
//
// The outbox is divided into partitions by aggregate (Of). The replicas hold
// leases on them in the database, each its fair share of the replicas alive
// (FairShare, Store.Heartbeat), and a replica claims only from the
// partitions it holds, one claim at a time per partition, in write order
// (Store.ClaimInOrder): so no two claims wait on each other's rows, and the
// order never rests on the leases alone — a claim waits for rows another
// holds instead of skipping them.
//
// Ordered wraps this as an outbox.Store: the relay (outbox.Relay) runs the
// same loop in both modes and knows nothing of partitions, leases or turns.
package partition

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
)

// Of is the partition of an outbox row whose aggregate is id when the
// outbox has partitions partitions: the first 4 bytes of the SHA-256 of the
// id's 16 bytes, read as an unsigned big-endian integer, modulo partitions.
// The database computes the same number (the SQL function outbox_partition);
// this twin exists for tests and tools, and for any writer in another
// language, which can compute it from this sentence. It must never change:
// the pending indexes are built from it.
func Of(id uuid.UUID, partitions int) int {
	sum := sha256.Sum256(id[:])
	return int(uint64(binary.BigEndian.Uint32(sum[:4])) % uint64(partitions))
}

// Claim says which rows one ordered claim may take.
type Claim struct {
	Limit int // rows at most
	// Partitions is the partition count Owned refers to (an Assignment's).
	Partitions int
	// Owned are the partitions to claim from, ascending.
	Owned []int
	// Owner is the replica whose leases Owned are: a claim reads only the
	// partitions of Owned whose lease Owner still holds by the store's
	// clock, so a stale Owned never reads a partition another replica took.
	Owner string
}

// Store is the outbox table, as ordered mode needs it.
type Store interface {
	// ClaimInOrder is outbox.Store's Claim in write order, from the
	// partitions c names: it reads the first c.Limit PENDING rows in write
	// order, locking them — waiting for rows another claim holds, so no row
	// overtakes one of its aggregate still at the broker — and passes
	// publish the first of each aggregate, when it is due and the aggregate
	// has no row waiting for a retry. It returns how many rows it locked:
	// fewer than c.Limit when the partitions have no more (publish is not
	// called when none is publishable). Cancellation and deadline are as
	// for outbox.Store's Claim.
	ClaimInOrder(ctx context.Context, c Claim, publish func(context.Context, []outbox.Message) outbox.Result) (int, error)

	// Heartbeat records owner as alive for ttl from now and renews the
	// leases it holds for as long, then moves it towards its FairShare of
	// the partitions among the replicas alive: it gives up the partitions
	// past its share, and takes free or expired ones up to it.
	Heartbeat(ctx context.Context, owner string, ttl time.Duration) (Assignment, error)
	// Release gives up every lease of owner and its membership, so that
	// the other replicas take its partitions at their next heartbeat
	// instead of after the leases expire.
	Release(ctx context.Context, owner string) error
}

// Assignment is what a lease heartbeat leaves a replica with.
type Assignment struct {
	// Partitions is the outbox's partition count at the heartbeat.
	Partitions int
	// Owned are the partitions whose leases the replica holds, ascending.
	Owned []int
	// Took and Released count the partitions the heartbeat acquired and gave
	// up: a rebalance when either is not zero.
	Took, Released int
	// Replicas is how many replicas are alive, this one among them.
	Replicas int
}

// FairShare is how many of partitions the member me should hold when members
// (me among them) divide them: partitions/len(members), and one more for the
// first partitions%len(members) members in sorted order, so the shares add up
// to partitions exactly and every member computes the same split.
func FairShare(partitions int, members []string, me string) int {
	if len(members) == 0 {
		return partitions
	}
	sorted := slices.Clone(members)
	slices.Sort(sorted)
	rank, found := slices.BinarySearch(sorted, me)
	if !found {
		rank = len(sorted) // not yet counted: the smallest share
		sorted = append(sorted, me)
	}
	share := partitions / len(sorted)
	if rank < partitions%len(sorted) {
		share++
	}
	return share
}
