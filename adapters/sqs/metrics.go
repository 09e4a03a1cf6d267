package sqs

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/application/provenance"
)

// Metrics are the consumer's Prometheus metrics. Create them once per
// process with NewMetrics, on the registry the service serves.
type Metrics struct {
	processed  *prometheus.CounterVec
	duplicates prometheus.Counter
	conflicts  prometheus.Counter
	failures   *prometheus.CounterVec
	ackFailed  prometheus.Counter
	released   prometheus.Counter
	dlqDepth   prometheus.Gauge
	eventAge   prometheus.Histogram

	// unverified and unsignedAccepted count the signature checks that did
	// not verify a message (provenance.go).
	unverified       *prometheus.CounterVec
	unsignedAccepted prometheus.Counter
}

// NewMetrics registers a consumer's metrics on reg, their names starting
// with service and an underscore (ledger_dlq_messages,
// webhooks_dlq_messages): each consuming service's series are its own.
func NewMetrics(reg prometheus.Registerer, service string) *Metrics {
	m := &Metrics{
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: service + "_messages_processed_total",
			Help: "Messages committed and acknowledged, by outcome (applied, duplicate, ignored; recorded: left for the inbox processor, in the async mode; parked: recorded parked, its posting refused for good).",
		}, []string{"outcome"}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: service + "_duplicates_suppressed_total",
			Help: "Redelivered or republished messages the inbox or the business key absorbed.",
		}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: service + "_event_id_conflicts_total",
			Help: "Messages that reused the id of a recorded event with another body: dropped (the first is kept), never a redelivery; a producer bug or a forgery.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: service + "_processing_failures_total",
			Help: "Messages left unacknowledged, by reason: poison (will reach the DLQ) or error (will be retried).",
		}, []string{"reason"}),
		ackFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: service + "_ack_failures_total",
			Help: "Committed messages whose delete failed; their redelivery is absorbed by the inbox.",
		}),
		released: prometheus.NewCounter(prometheus.CounterOpts{
			Name: service + "_messages_released_total",
			Help: "Messages received but not applied, made visible again because a stop or a handler timeout cut their batch; each spent a receive.",
		}),
		unverified: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: service + "_messages_unverified_total",
			Help: "Messages that failed the check of the payments service's signature, by reason (missing_signature, malformed_signature, unknown_key, bad_signature): moved to the DLQ unapplied. Any is a forgery or a key misconfigured.",
		}, []string{"reason"}),
		unsignedAccepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: service + "_messages_unsigned_accepted_total",
			Help: "Messages without a signature applied because PAYMENTS_UNSIGNED_EVENTS=accept (a rollout's transition): once it stops growing, refuse them.",
		}),
		dlqDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: service + "_dlq_messages",
			Help: "Approximate number of messages in the dead-letter queue; alert on any.",
		}),
		eventAge: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    service + "_event_age_seconds",
			Help:    "Time from the event's occurrence (its CloudEvent time) to its application by the consumer.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 12),
		}),
	}
	for _, o := range []string{"applied", "duplicate", "ignored", "recorded", "parked"} {
		m.processed.WithLabelValues(o)
	}
	for _, r := range []string{"poison", "error"} {
		m.failures.WithLabelValues(r)
	}
	for _, r := range provenance.Reasons {
		m.unverified.WithLabelValues(r)
	}
	reg.MustRegister(m.processed, m.duplicates, m.conflicts, m.failures, m.ackFailed, m.released, m.dlqDepth, m.eventAge, m.unverified, m.unsignedAccepted)
	return m
}
