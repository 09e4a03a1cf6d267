package outboxstore

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
)

// Ordered mode's claims (application/outbox/partition): each aggregate's
// rows in write order, from the partitions the claiming replica holds
// leases on.

// leasedOfSQL is, of the partitions $2 names, the ones whose lease the
// claiming relay ($3) holds by the database's clock. Every claim reads only
// those: the relay names the partitions its last heartbeat left it, and a
// claim made from that list after it went stale — the heartbeat that gave a
// partition up committed, but its answer was lost, or the process paused
// past the expiry — still never reads a partition another replica has
// taken. It reads at most the partition count's rows of outbox_leases, once
// per claim (an InitPlan).
const leasedOfSQL = `SELECT partition FROM outbox_leases WHERE partition = ANY($2::int[]) AND owner = $3 AND expires_at > now()`

// leaseHeldSQL is leasedOfSQL for the one partition $2 of
// claimInOrderInPartitionSQL: a row when the relay $3 holds its lease.
const leaseHeldSQL = `SELECT FROM outbox_leases WHERE partition = $2 AND owner = $3 AND expires_at > now()`

// claimInOrderInPartitionsSQL is the ordered claim of the partitions $2
// names whose leases the relay $3 holds: their PENDING rows in write order
// (seq), due or not, leaving out the aggregates with a row waiting for its
// retry (found through the due-first index of the partition count: only
// the rows due later). No SKIP LOCKED: a row another claim holds is waited
// for, so the rows behind it are read only once it is published or failed;
// the last column is whether the row, as it is after that wait, is due. The
// caller keeps the first row of each aggregate that is due
// (firstDuePerAggregate). The partition count is written into the
// statement (%[1]d), a constant, because that is what the pending indexes
// are built on (outbox_ordered_p<N>_idx, outbox_pending_p<N>_idx): with it
// the planner scans each named partition's range of the index in index
// order, and no claim reads rows of a partition it does not own.
const claimInOrderInPartitionsSQL = `
WITH blocked AS (
    SELECT DISTINCT aggregate_id FROM outbox
    WHERE outbox_partition(aggregate_id, %[1]d) = ANY($2) AND status = 'PENDING' AND next_attempt_at > now())
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, next_attempt_at <= now()
FROM outbox
WHERE outbox_partition(aggregate_id, %[1]d) = ANY(ARRAY(` + leasedOfSQL + `)) AND status = 'PENDING'
    AND aggregate_id NOT IN (SELECT aggregate_id FROM blocked)
ORDER BY outbox_partition(aggregate_id, %[1]d), seq
LIMIT $1
FOR UPDATE OF outbox`

// claimInOrderInPartitionSQL is claimInOrderInPartitionsSQL for the one
// partition $2, the claim a backlog drains with: an equality on the
// partition leaves the index in the order of the other columns, so the
// partition expression is not computed for each row returned, as ORDER BY
// needs it to be across several partitions.
const claimInOrderInPartitionSQL = `
WITH blocked AS (
    SELECT DISTINCT aggregate_id FROM outbox
    WHERE outbox_partition(aggregate_id, %[1]d) = $2 AND status = 'PENDING' AND next_attempt_at > now())
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, next_attempt_at <= now()
FROM outbox
WHERE outbox_partition(aggregate_id, %[1]d) = $2 AND status = 'PENDING'
    AND aggregate_id NOT IN (SELECT aggregate_id FROM blocked)
    AND EXISTS (` + leaseHeldSQL + `)
ORDER BY seq
LIMIT $1
FOR UPDATE OF outbox`

// ClaimInOrder implements partition.Store, in one transaction as Claim.
func (s *Store) ClaimInOrder(ctx context.Context, c partition.Claim, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	switch len(c.Owned) {
	case 0:
		return 0, nil
	case 1:
		return s.claim(ctx, fmt.Sprintf(claimInOrderInPartitionSQL, c.Partitions), []any{c.Limit, int32(c.Owned[0]), c.Owner}, c.Limit, true, publish)
	default:
		return s.claim(ctx, fmt.Sprintf(claimInOrderInPartitionsSQL, c.Partitions), []any{c.Limit, int32s(c.Owned), c.Owner}, c.Limit, true, publish)
	}
}

func int32s(ps []int) []int32 {
	out := make([]int32, len(ps))
	for i, p := range ps {
		out[i] = int32(p)
	}
	return out
}

// firstDuePerAggregate keeps, of rows in write order, the first row of each
// aggregate when it is due: one row per aggregate per batch, because the
// publisher may send the rows of one batch in any order, and a row of an
// aggregate whose first row is not due (failed while this claim waited for
// it) stays behind it.
func firstDuePerAggregate(rows []claimedRow) []outbox.Message {
	seen := make(map[uuid.UUID]bool, len(rows))
	msgs := make([]outbox.Message, 0, len(rows))
	for _, r := range rows {
		if !seen[r.AggregateID] && r.due {
			msgs = append(msgs, r.Message)
		}
		seen[r.AggregateID] = true
	}
	return msgs
}
