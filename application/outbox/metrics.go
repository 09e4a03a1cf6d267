package outbox

import "time"

// Metrics is what the relay reports for monitoring. The binary passes an
// implementation (adapters/metrics exports it to Prometheus); a Relay built
// with nil metrics records nothing, so tests and benchmarks need no special case.
// Of the series behind it, the age of the oldest PENDING row is the one to
// alert on: it grows whenever events stop leaving, whatever the cause (broker
// down, relay stuck, a replica starved of connections).
type Metrics interface {
	// PublishCall records the duration of one batch's publish (all its broker calls).
	PublishCall(d time.Duration)
	// Published records one message the broker acknowledged, sinceCommit after
	// its event committed (the outbox row's created_at).
	Published(sinceCommit time.Duration)
	// PublishFailed records one message the broker did not acknowledge; each
	// attempt counts.
	PublishFailed()
	// Dead records one message moved to DEAD.
	Dead()
	// Backlog records the outbox's backlog as the table reports it.
	Backlog(Stats)
	// BatchSize records how many rows the relay claims at once:
	// Config.BatchSize, or fewer while the broker answers slower than the
	// publish deadline (batchsize.go).
	BatchSize(n int)
}

// noMetrics records nothing; it stands in for nil Metrics.
type noMetrics struct{}

func (noMetrics) PublishCall(time.Duration) {}
func (noMetrics) Published(time.Duration)   {}
func (noMetrics) PublishFailed()            {}
func (noMetrics) Dead()                     {}
func (noMetrics) Backlog(Stats)             {}
func (noMetrics) BatchSize(int)             {}
