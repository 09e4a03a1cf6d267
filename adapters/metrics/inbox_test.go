package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/metrics"
	"github.com/payments-outbox/payments-outbox/application/inbox"
)

// TestInboxSeries checks the series docs/OPERATIONS.md and the runbook name keep
// their names and take what the processor reports.
func TestInboxSeries(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := metrics.NewInbox(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Backlog(inbox.Stats{Pending: 5, OldestPending: 42 * time.Second, Parked: 2, Unhandled: 3})
	m.Processed(true, time.Second)
	m.Processed(false, -1)
	m.Failed(false)
	m.Failed(false)
	m.Failed(true)
	m.UnhandledDeleted(1000)
	m.UnhandledDeleted(7)

	got := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			name := f.GetName()
			for _, l := range metric.GetLabel() {
				name += "{" + l.GetValue() + "}"
			}
			switch {
			case metric.Gauge != nil:
				got[name] = metric.GetGauge().GetValue()
			case metric.Counter != nil:
				got[name] = metric.GetCounter().GetValue()
			case metric.Histogram != nil:
				got[name] = float64(metric.GetHistogram().GetSampleCount())
			}
		}
	}
	want := map[string]float64{
		"inbox_pending_rows":                      5,
		"inbox_oldest_pending_age_seconds":        42,
		"inbox_parked_rows":                       2,
		"inbox_unhandled_rows":                    3,
		"inbox_unhandled_deleted_total":           1007,
		"inbox_processed_total{applied}":          1,
		"inbox_processed_total{duplicate}":        1,
		"inbox_processing_failures_total{retry}":  2,
		"inbox_processing_failures_total{parked}": 1,
		"inbox_event_age_seconds":                 1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %v, want %v", k, got[k], v)
		}
	}
}
