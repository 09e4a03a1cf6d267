package relay

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Leases: the replicas divide the outbox's partitions between them with
// leases in the database (Store.Heartbeat), each taking its FairShare of the
// replicas alive, and a relay claims only from the partitions it holds. So
// no two replicas scan the same part of the pending index, and none steps
// over rows another holds.
//
// Leases keep the replicas apart; they are not what keeps events in order.
// A claim names its owner (Claim.Owner) and reads only the partitions whose
// lease that owner holds by the database's clock, so a replica whose idea of
// its leases went stale (paused past the expiry, or a heartbeat's answer
// lost) claims nothing from a partition another took. Only a claim already
// running when its lease expired can overlap the new owner's: unordered,
// SKIP LOCKED keeps their batches apart; ordered, the second claim waits on
// the rows the first one locked, so nothing overtakes a row still at the
// broker.

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

// leases is what a relay knows of the leases it holds.
type leases struct {
	// rebalance asks the heartbeat loop for a heartbeat now.
	rebalance chan struct{}

	mu  sync.Mutex
	asg Assignment
	// validUntil is when the leases of asg expire if no heartbeat renews
	// them, by this process's monotonic clock, counted from before the
	// heartbeat was sent: the database's expiry is never earlier.
	validUntil time.Time
}

func newLeases() *leases { return &leases{rebalance: make(chan struct{}, 1)} }

// set records a heartbeat's assignment and reports whether the partitions
// changed.
func (l *leases) set(a Assignment, validUntil time.Time) (changed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	changed = a.Partitions != l.asg.Partitions || !slices.Equal(a.Owned, l.asg.Owned)
	l.asg, l.validUntil = a, validUntil
	return changed
}

// Owner is the name this relay holds its leases under.
func (r *Relay) Owner() string { return r.cfg.Owner }

// Owned returns the partition count and the partitions this relay holds
// leases on; no partitions once the leases may have expired unrenewed.
func (r *Relay) Owned() (partitions int, owned []int) {
	l := r.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Now().After(l.validUntil) {
		return l.asg.Partitions, nil
	}
	return l.asg.Partitions, l.asg.Owned
}

// Rebalance asks for a lease heartbeat now instead of at the next interval:
// another replica released partitions or lacks its share (a NOTIFY with the
// store's rebalance payload says so). It never blocks; heartbeats it causes
// are at least a tenth of Config.Heartbeat apart.
func (r *Relay) Rebalance() {
	select {
	case r.leases.rebalance <- struct{}{}:
	default:
	}
}

// Heartbeat renews and rebalances this relay's leases once (Store.Heartbeat)
// and hands its workers the partitions it now holds. Run calls it every
// Config.Heartbeat; it is exported for tests that drive the relay by Step.
func (r *Relay) Heartbeat(ctx context.Context) error {
	sent := time.Now()
	a, err := r.store.Heartbeat(ctx, r.cfg.Owner, r.cfg.LeaseDuration)
	if err != nil {
		return fmt.Errorf("lease heartbeat: %w", err)
	}
	if a.Took+a.Released > 0 {
		r.metrics.Rebalanced()
		r.log.InfoContext(ctx, "outbox relay: partitions rebalanced",
			"owner", r.cfg.Owner, "owned", len(a.Owned), "took", a.Took, "released", a.Released, "partitions", a.Partitions)
	}
	r.setAssignment(a, sent.Add(r.cfg.LeaseDuration))
	r.turns.share(a.Replicas)
	return nil
}

func (r *Relay) setAssignment(a Assignment, validUntil time.Time) {
	changed := r.leases.set(a, validUntil)
	r.metrics.OwnedPartitions(len(a.Owned))
	if changed {
		r.loop.WakeAll() // new partitions may hold a backlog
	}
}

// keepLeases heartbeats every Config.Heartbeat, and at once on Rebalance,
// until ctx ends.
func (r *Relay) keepLeases(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.leases.rebalance:
			if wait := r.cfg.Heartbeat/10 - time.Since(last); wait > 0 {
				// Too soon after the last one: beat once the gap is kept
				// (Reset drops any tick pending on t.C).
				t.Reset(wait)
				continue
			}
		}
		last = time.Now()
		if err := r.Heartbeat(ctx); err != nil && ctx.Err() == nil {
			r.log.WarnContext(ctx, "outbox relay: lease heartbeat failed; retrying", "err", err)
		}
		t.Reset(r.cfg.Heartbeat)
	}
}

// releaseLeases gives up this relay's leases, so that the other replicas
// take its partitions at their next heartbeat instead of once the leases
// expire.
func (r *Relay) releaseLeases(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.store.Release(rctx, r.cfg.Owner); err != nil {
		r.log.WarnContext(rctx, "outbox relay: releasing leases failed; other replicas take the partitions when the leases expire",
			"owner", r.cfg.Owner, "err", err, "lease_duration", r.cfg.LeaseDuration)
	}
	r.setAssignment(Assignment{}, time.Time{})
}
