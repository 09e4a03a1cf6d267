// Package metrics exports what the application's metric ports report as
// Prometheus series. The application declares the port (outbox.Metrics) and
// never imports Prometheus; the binary registers these series on the registry
// its /metrics serves (no global registry).
package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
)

var (
	_ outbox.Metrics    = (*Relay)(nil)
	_ partition.Metrics = (*Relay)(nil)
)

// Relay is the outbox relay's series, and ordered mode's (partition.Metrics). The age of the oldest PENDING row is the
// one to alert on (docs/OPERATIONS.md, "What to monitor").
type Relay struct {
	oldestPendingAge prometheus.Gauge
	pendingRows      prometheus.Gauge
	deadRows         prometheus.Gauge
	published        prometheus.Counter
	failures         prometheus.Counter
	dead             prometheus.Counter
	latency          prometheus.Histogram
	callDuration     prometheus.Histogram
	batchSize        prometheus.Gauge
	partitionAge     *prometheus.GaugeVec
	ownedPartitions  prometheus.Gauge
	rebalances       prometheus.Counter
}

// NewRelay creates the relay's series and registers them on reg. It fails if
// reg already holds series of the same names.
func NewRelay(reg prometheus.Registerer) (*Relay, error) {
	m := &Relay{
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
		batchSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_relay_batch_size",
			Help: "Rows this replica's relay claims at once: OUTBOX_BATCH_SIZE, or fewer while the broker answers slower than the publish deadline (halved after each batch that ran out of it).",
		}),
		partitionAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "outbox_partition_oldest_pending_age_seconds",
			Help: "Age of the oldest PENDING outbox row per partition; 0 when none. In ordered mode, one growing while the others stay low is a stuck partition (docs/RUNBOOK.md).",
		}, []string{"partition"}),
		ownedPartitions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_relay_owned_partitions",
			Help: "Ordered mode: outbox partitions this replica holds leases on; summed over replicas it is the partition count.",
		}),
		rebalances: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_relay_rebalances_total",
			Help: "Ordered mode: lease heartbeats of this replica that took or gave up partitions (replicas came or went).",
		}),
	}
	for _, c := range []prometheus.Collector{m.oldestPendingAge, m.pendingRows, m.deadRows,
		m.published, m.failures, m.dead, m.latency, m.callDuration, m.batchSize,
		m.partitionAge, m.ownedPartitions, m.rebalances} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// PublishCall implements outbox.Metrics.
func (m *Relay) PublishCall(d time.Duration) { m.callDuration.Observe(d.Seconds()) }

// Published implements outbox.Metrics.
func (m *Relay) Published(sinceCommit time.Duration) {
	m.published.Inc()
	m.latency.Observe(sinceCommit.Seconds())
}

// PublishFailed implements outbox.Metrics.
func (m *Relay) PublishFailed() { m.failures.Inc() }

// Dead implements outbox.Metrics.
func (m *Relay) Dead() { m.dead.Inc() }

// Backlog implements outbox.Metrics: the gauges take the whole table's
// backlog, which every replica reports alike.
func (m *Relay) Backlog(s outbox.Stats) {
	m.pendingRows.Set(float64(s.Pending))
	m.deadRows.Set(float64(s.Dead))
	m.oldestPendingAge.Set(s.OldestPending.Seconds())
}

// BatchSize implements outbox.Metrics.
func (m *Relay) BatchSize(n int) { m.batchSize.Set(float64(n)) }

// PartitionBacklog implements partition.Metrics: every partition has a
// series, 0 when it has nothing pending, as the overall gauge is; a change
// of the partition count drops the old ones.
func (m *Relay) PartitionBacklog(b partition.Backlog) {
	m.partitionAge.Reset()
	age := make([]float64, b.Partitions)
	for _, p := range b.ByPartition {
		if p.Partition >= 0 && p.Partition < len(age) {
			age[p.Partition] = p.OldestPending.Seconds()
		}
	}
	for p, a := range age {
		m.partitionAge.WithLabelValues(strconv.Itoa(p)).Set(a)
	}
}

// OwnedPartitions implements partition.Metrics.
func (m *Relay) OwnedPartitions(n int) { m.ownedPartitions.Set(float64(n)) }

// Rebalanced implements partition.Metrics.
func (m *Relay) Rebalanced() { m.rebalances.Inc() }
