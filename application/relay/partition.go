package relay

import (
	"context"
	"crypto/sha256"
	"encoding/binary"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/claimloop"
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

// workerShares divides the partitions a relay holds between its workers
// (claimloop.Shares): worker w claims from every Workers-th of them, so no
// two claim loops of a replica scan the same part of the pending index. A
// wake-up (a NOTIFY says only that something committed, not where) makes
// one worker sweep all the replica's partitions in one claim; when that
// comes back full there is a backlog, and every worker drains its own
// partitions, one partition to a claim, until they run dry: a claim of one
// partition reads only that partition's part of the index.
type workerShares struct {
	workers int
	owned   func() (partitions int, owned []int) // the partitions the leases hold
	step    func(ctx context.Context, partitions int, parts []int) (int, error)
}

var _ claimloop.Shares = workerShares{}

func (s workerShares) Sweep() claimloop.Step { return s.claim(s.owned()) }

func (s workerShares) Own(w int) claimloop.Step { return s.claim(s.share(w)) }

func (s workerShares) Drain(w int) []claimloop.Step {
	partitions, mine := s.share(w)
	steps := make([]claimloop.Step, len(mine))
	for i, p := range mine {
		steps[i] = s.claim(partitions, []int{p})
	}
	return steps
}

// share is worker w's part of the owned partitions: every Workers-th.
func (s workerShares) share(w int) (partitions int, mine []int) {
	partitions, owned := s.owned()
	for j := w; j < len(owned); j += s.workers {
		mine = append(mine, owned[j])
	}
	return partitions, mine
}

// claim is the step that claims from parts; nil when there are none.
func (s workerShares) claim(partitions int, parts []int) claimloop.Step {
	if len(parts) == 0 {
		return nil
	}
	return func(ctx context.Context) (int, error) { return s.step(ctx, partitions, parts) }
}
