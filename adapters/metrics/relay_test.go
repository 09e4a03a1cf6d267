package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/metrics"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
)

// TestRelaySeries checks the series docs/OPERATIONS.md and the runbook alert on keep
// their names and take what the relay reports.
func TestRelaySeries(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := metrics.NewRelay(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.NewRelay(reg); err == nil {
		t.Error("registering twice on one registry: got no error, want one")
	}

	m.Backlog(outbox.Stats{Pending: 7, Dead: 2, OldestPending: 90 * time.Second})
	m.PartitionBacklog(partition.Backlog{Partitions: 4,
		ByPartition: []partition.PartitionBacklog{{Partition: 3, Pending: 7, OldestPending: 90 * time.Second}}})
	m.OwnedPartitions(16)
	m.Rebalanced()
	m.PublishCall(30 * time.Millisecond)
	m.Published(time.Second)
	m.Published(2 * time.Second)
	m.PublishFailed()
	m.Dead()
	m.BatchSize(25)

	got := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			switch {
			case metric.GetGauge() != nil:
				got[f.GetName()] += metric.GetGauge().GetValue() // summed over partitions
			case metric.GetCounter() != nil:
				got[f.GetName()] = metric.GetCounter().GetValue()
			case metric.GetHistogram() != nil:
				got[f.GetName()] = metric.GetHistogram().GetSampleSum()
			}
		}
	}
	tests := []struct {
		name string
		want float64
	}{
		{"outbox_pending_rows", 7},
		{"outbox_dead_rows", 2},
		{"outbox_oldest_pending_age_seconds", 90},
		{"outbox_published_total", 2},
		{"outbox_publish_failures_total", 1},
		{"outbox_dead_total", 1},
		{"outbox_publish_latency_seconds", 3},          // sum of the observations, in seconds
		{"outbox_publish_call_duration_seconds", 0.03}, // one call of 30 ms
		{"outbox_relay_batch_size", 25},
		{"outbox_partition_oldest_pending_age_seconds", 90},
		{"outbox_relay_owned_partitions", 16},
		{"outbox_relay_rebalances_total", 1},
	}
	for _, tt := range tests {
		if v, ok := got[tt.name]; !ok || v != tt.want {
			t.Errorf("%s: got %v (present %v), want %v", tt.name, v, ok, tt.want)
		}
	}
	if len(got) != len(tests) {
		t.Errorf("got %d series, want %d: %v", len(got), len(tests), got)
	}
}
