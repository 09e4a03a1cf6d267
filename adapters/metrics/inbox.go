package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/application/inbox"
)

var (
	_ inbox.ProcessorMetrics = (*Inbox)(nil)
	_ inbox.UnhandledMetrics = (*Inbox)(nil)
)

// Inbox is the inbox processor's series, named like the outbox relay's: the
// inbox is the outbox's mirror on the consuming side. The age of the oldest
// pending row is the one to alert on (docs/OPERATIONS.md, "What to monitor").
type Inbox struct {
	oldestPendingAge prometheus.Gauge
	pendingRows      prometheus.Gauge
	parkedRows       prometheus.Gauge
	unhandledRows    prometheus.Gauge
	unhandledDeleted prometheus.Counter
	processed        *prometheus.CounterVec
	failures         *prometheus.CounterVec
	eventAge         prometheus.Histogram
}

// NewInbox creates the inbox processor's series and registers them on reg.
// It fails if reg already holds series of the same names.
func NewInbox(reg prometheus.Registerer) (*Inbox, error) {
	m := &Inbox{
		oldestPendingAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "inbox_oldest_pending_age_seconds",
			Help: "Age of the oldest inbox row waiting to be applied (of a type this version applies); 0 when none. It grows whenever the processor stops keeping up.",
		}),
		pendingRows: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "inbox_pending_rows",
			Help: "Inbox rows of a type this version applies, recorded and not applied yet, including those waiting for a retry.",
		}),
		parkedRows: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "inbox_parked_rows",
			Help: "Inbox rows that ran out of attempts or can never apply; the service's `inbox retry` puts them back.",
		}),
		unhandledRows: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "inbox_unhandled_rows",
			Help: "Inbox rows of a type this version does not apply, kept for a version that does.",
		}),
		unhandledDeleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "inbox_unhandled_deleted_total",
			Help: "Inbox rows of a type this version does not apply, deleted unapplied at the end of INBOX_UNHANDLED_RETENTION: messages no version applied in time.",
		}),
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inbox_processed_total",
			Help: "Inbox rows the processor committed, by outcome: applied, or duplicate (the business key was already posted).",
		}, []string{"outcome"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inbox_processing_failures_total",
			Help: "Failed attempts to apply an inbox row, by result: retry (scheduled with backoff) or parked (the row's last).",
		}, []string{"result"}),
		eventAge: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "inbox_event_age_seconds",
			Help:    "Time from the event's occurrence (its CloudEvent time) to its posting by the inbox processor.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 12),
		}),
	}
	for _, o := range []string{"applied", "duplicate"} {
		m.processed.WithLabelValues(o)
	}
	for _, r := range []string{"retry", "parked"} {
		m.failures.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.oldestPendingAge, m.pendingRows, m.parkedRows, m.unhandledRows,
		m.unhandledDeleted, m.processed, m.failures, m.eventAge} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Processed implements inbox.ProcessorMetrics.
func (m *Inbox) Processed(applied bool, sinceEvent time.Duration) {
	if !applied {
		m.processed.WithLabelValues("duplicate").Inc()
		return
	}
	m.processed.WithLabelValues("applied").Inc()
	if sinceEvent >= 0 {
		m.eventAge.Observe(sinceEvent.Seconds())
	}
}

// Failed implements inbox.ProcessorMetrics.
func (m *Inbox) Failed(parked bool) {
	if parked {
		m.failures.WithLabelValues("parked").Inc()
		return
	}
	m.failures.WithLabelValues("retry").Inc()
}

// Backlog implements inbox.ProcessorMetrics: every replica reports the
// whole table's backlog alike.
func (m *Inbox) Backlog(s inbox.Stats) {
	m.pendingRows.Set(float64(s.Pending))
	m.oldestPendingAge.Set(s.OldestPending.Seconds())
	m.parkedRows.Set(float64(s.Parked))
	m.unhandledRows.Set(float64(s.Unhandled))
}

// UnhandledDeleted implements inbox.UnhandledMetrics.
func (m *Inbox) UnhandledDeleted(n int) { m.unhandledDeleted.Add(float64(n)) }
