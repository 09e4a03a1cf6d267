package partition

import (
	"context"
	"log/slog"
	"time"

	"github.com/payments-outbox/payments-outbox/application/claimloop"
)

// Metrics is what ordered mode reports beside the relay's outbox.Metrics
// (adapters/metrics exports both); nil records nothing.
type Metrics interface {
	// OwnedPartitions records how many partitions this replica holds leases on.
	OwnedPartitions(n int)
	// Rebalanced records a heartbeat that took or gave up partitions.
	Rebalanced()
	// PartitionBacklog records the PENDING backlog per partition.
	PartitionBacklog(Backlog)
}

type noMetrics struct{}

func (noMetrics) OwnedPartitions(int)      {}
func (noMetrics) Rebalanced()              {}
func (noMetrics) PartitionBacklog(Backlog) {}

// Backlog is the PENDING backlog per partition: a stuck partition is one
// whose oldest pending age keeps growing while the others' do not.
type Backlog struct {
	// Partitions is the outbox's partition count.
	Partitions int
	// ByPartition has one entry per partition with PENDING rows, ascending.
	ByPartition []PartitionBacklog
}

// PartitionBacklog is the PENDING backlog of one partition.
type PartitionBacklog struct {
	Partition     int
	Pending       int64
	OldestPending time.Duration
}

// BacklogSource reads the backlog per partition.
type BacklogSource interface {
	// PartitionBacklog counts the PENDING rows of each partition and
	// measures the age of its oldest on the database's clock.
	PartitionBacklog(ctx context.Context) (Backlog, error)
}

// RefreshGauges reports the backlog per partition to m every interval
// until ctx ends, backing off as outbox.RefreshGauges does while counting
// is slow.
func RefreshGauges(ctx context.Context, src BacklogSource, m Metrics, every time.Duration, log *slog.Logger) error {
	if m == nil {
		m = noMetrics{}
	}
	claimloop.CountEvery(ctx, every, func(ctx context.Context) {
		b, err := src.PartitionBacklog(ctx)
		switch {
		case err == nil:
			m.PartitionBacklog(b)
		case ctx.Err() == nil:
			log.WarnContext(ctx, "outbox partition backlog failed", "err", err)
		}
	})
	return nil
}
