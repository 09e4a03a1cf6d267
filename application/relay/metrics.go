package relay

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the relay's Prometheus series. The age of the oldest PENDING row is
// the one to alert on: it grows whenever events stop leaving, whatever the cause
// (broker down, relay stuck, a replica starved of connections).
type Metrics struct {
	oldestPendingAge prometheus.Gauge
	pendingRows      prometheus.Gauge
	deadRows         prometheus.Gauge
	published        prometheus.Counter
	failures         prometheus.Counter
	dead             prometheus.Counter
	latency          prometheus.Histogram
	callDuration     prometheus.Histogram
}

// NewMetrics creates the relay's series and registers them on reg, so the binary
// decides which registry /metrics serves (no global registry).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		oldestPendingAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_oldest_pending_age_seconds",
			Help: "Age of the oldest PENDING outbox row; 0 when none. The alert signal: it grows whenever events stop leaving.",
		}),
		pendingRows: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_pending_rows",
			Help: "Outbox rows waiting to be published, including those waiting for a retry.",
		}),
		deadRows: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_dead_rows",
			Help: "Outbox rows that exhausted their attempts; requeue them with `payments outbox requeue`.",
		}),
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_published_total",
			Help: "Outbox messages acknowledged by the broker.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_publish_failures_total",
			Help: "Outbox messages the broker did not acknowledge (each attempt counts).",
		}),
		dead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_dead_total",
			Help: "Outbox messages moved to DEAD after their last attempt.",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "outbox_publish_latency_seconds",
			Help:    "Time from the event's commit (outbox created_at) to the broker's acknowledgement.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800},
		}),
		callDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "outbox_publish_call_duration_seconds",
			Help:    "Duration of one batch publish to the broker (all its PublishBatch calls).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
	}
	for _, c := range []prometheus.Collector{m.oldestPendingAge, m.pendingRows, m.deadRows,
		m.published, m.failures, m.dead, m.latency, m.callDuration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// The observe methods accept a nil *Metrics so a Relay built without metrics (tests,
// benchmarks) needs no special case.

func (m *Metrics) observeCall(d time.Duration) {
	if m != nil {
		m.callDuration.Observe(d.Seconds())
	}
}

func (m *Metrics) observePublished(sinceCommit time.Duration) {
	if m != nil {
		m.published.Inc()
		m.latency.Observe(max(sinceCommit, 0).Seconds())
	}
}

func (m *Metrics) observeFailure() {
	if m != nil {
		m.failures.Inc()
	}
}

func (m *Metrics) observeDead() {
	if m != nil {
		m.dead.Inc()
	}
}

func (m *Metrics) setStats(s Stats) {
	if m != nil {
		m.pendingRows.Set(float64(s.Pending))
		m.deadRows.Set(float64(s.Dead))
		m.oldestPendingAge.Set(s.OldestPending.Seconds())
	}
}
