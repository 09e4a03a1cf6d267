package relay

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"

	"github.com/google/uuid"
)

// PartitionOf is the partition of an outbox row whose aggregate is id when the
// outbox has partitions partitions: the first 4 bytes of the SHA-256 of the
// id's 16 bytes, read as an unsigned big-endian integer, modulo partitions.
// The database computes the same number (the SQL function outbox_partition);
// this twin exists for tests and tools, and for any writer in another
// language, which can compute it from this sentence. It must never change:
// the pending indexes are built from it.
func PartitionOf(id uuid.UUID, partitions int) int {
	sum := sha256.Sum256(id[:])
	return int(uint64(binary.BigEndian.Uint32(sum[:4])) % uint64(partitions))
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
