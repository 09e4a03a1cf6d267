// Package webhooksmetrics exports the webhooks service's own series, behind
// the port its delivery workers declare (webhooks.WorkerMetrics), as
// Prometheus series registered on the registry the binary's /metrics
// serves. The series every consumer shares are adapters/metrics'.
package webhooksmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

var _ webhooks.WorkerMetrics = (*Workers)(nil)

// Workers is the delivery workers' series (docs/WEBHOOKS.md). The alerts
// read the oldest undelivered age (lagging), the parked count, the share
// of failed attempts and the disablings.
type Workers struct {
	attempts        *prometheus.CounterVec
	duration        *prometheus.HistogramVec
	oldest          prometheus.Gauge
	endpointOldest  *prometheus.GaugeVec
	pending, parked prometheus.Gauge
	disabled        *prometheus.CounterVec
	shown           map[string]bool // endpoints with an age series now
}

// TopEndpoints is how many endpoints get an age series of their own: the
// oldest, so that the cardinality stays bounded however many there are.
const TopEndpoints = 20

// outcomes are the attempts' outcome labels.
var outcomes = []string{"delivered", "failed", "gone", "timeout", "refused"}

// New creates the delivery workers' series and registers them on
// reg. It fails if reg already holds series of the same names.
func New(reg prometheus.Registerer) (*Workers, error) {
	m := &Workers{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "webhooks_attempts_total",
			Help: "Webhook attempts by outcome: delivered (2xx), failed (another answer or a connection error), gone (410: the endpoint is disabled), timeout (no answer within WEBHOOKS_ATTEMPT_TIMEOUT), refused (the address dialled is not public: nothing sent).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "webhooks_attempt_duration_seconds",
			Help:    "Time from an attempt's dial to its answer's last byte read, by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10),
		}, []string{"outcome"}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "webhooks_oldest_undelivered_age_seconds",
			Help: "Age of the oldest delivery not yet delivered (due or retrying) of an enabled endpoint; 0 when none.",
		}),
		endpointOldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "webhooks_endpoint_oldest_undelivered_age_seconds",
			Help: "Age of the oldest undelivered delivery of each of the 20 endpoints lagging most.",
		}, []string{"endpoint_id"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "webhooks_deliveries_pending",
			Help: "Deliveries of enabled endpoints due or waiting for a retry.",
		}),
		parked: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "webhooks_deliveries_parked",
			Help: "Deliveries whose retry schedule is spent: each waits for a redelivery.",
		}),
		disabled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "webhooks_endpoints_disabled_total",
			Help: "Endpoints disabled, by reason: gone (answered 410) or failing (every attempt failed for WEBHOOKS_DISABLE_AFTER).",
		}, []string{"reason"}),
		shown: map[string]bool{},
	}
	for _, o := range outcomes {
		m.attempts.WithLabelValues(o)
	}
	for _, r := range []string{"gone", "failing"} {
		m.disabled.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.attempts, m.duration, m.oldest, m.endpointOldest, m.pending, m.parked, m.disabled} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Attempted implements webhooks.WorkerMetrics.
func (m *Workers) Attempted(outcome string, d time.Duration) {
	m.attempts.WithLabelValues(outcome).Inc()
	m.duration.WithLabelValues(outcome).Observe(d.Seconds())
}

// Disabled implements webhooks.WorkerMetrics.
func (m *Workers) Disabled(reason string) { m.disabled.WithLabelValues(reason).Inc() }

// Backlog implements webhooks.WorkerMetrics: the endpoints no longer among
// the top lose their series. It is called from one goroutine.
func (m *Workers) Backlog(s webhooks.DeliveryStats) {
	m.pending.Set(float64(s.Pending))
	m.parked.Set(float64(s.Parked))
	m.oldest.Set(s.OldestUndelivered.Seconds())
	now := map[string]bool{}
	for _, e := range s.Endpoints[:min(len(s.Endpoints), TopEndpoints)] {
		now[e.EndpointID] = true
		m.endpointOldest.WithLabelValues(e.EndpointID).Set(e.OldestUndelivered.Seconds())
	}
	for id := range m.shown {
		if !now[id] {
			m.endpointOldest.DeleteLabelValues(id)
		}
	}
	m.shown = now
}
