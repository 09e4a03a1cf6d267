package outbox

import (
	"context"
	"log/slog"
	"time"

	"github.com/payments-outbox/payments-outbox/application/claimloop"
)

// Stats is a snapshot of the outbox backlog: what `payments outbox stats` prints
// and the gauges export.
type Stats struct {
	Pending       int64
	Dead          int64
	OldestPending time.Duration // age of the oldest PENDING row; 0 when none
	ByType        []TypeStats   // sorted by type
}

// TypeStats is the backlog of one event type.
type TypeStats struct {
	Type          string
	Pending       int64
	Dead          int64
	OldestPending time.Duration
}

// StatsSource reads the backlog snapshot.
type StatsSource interface {
	// Stats counts PENDING and DEAD rows, overall and per type, and measures the
	// age of the oldest PENDING row on the database's clock.
	Stats(ctx context.Context) (Stats, error)
}

// RefreshGauges reports Stats to m's backlog gauges every interval until ctx
// ends. The gauges come from the table rather than from this process's
// counters because several replicas share one outbox: each replica reports the
// whole backlog. Counting a huge backlog is a scan, so the wait grows with the
// time the last count took (claimloop.StatsWait): the gauges never cost the database
// more than a sliver of one connection, exactly when it has the most to do.
func RefreshGauges(ctx context.Context, src StatsSource, m Metrics, every time.Duration, log *slog.Logger) error {
	if m == nil {
		m = noMetrics{}
	}
	claimloop.CountEvery(ctx, every, func(ctx context.Context) {
		s, err := src.Stats(ctx)
		switch {
		case err == nil:
			m.Backlog(s)
		case ctx.Err() == nil:
			log.WarnContext(ctx, "outbox stats failed", "err", err)
		}
	})
	return nil
}
