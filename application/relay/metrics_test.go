package relay_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/application/relay"
)

type stubStats struct {
	stats relay.Stats
	done  func() // called after the first read, to end the loop
}

func (s stubStats) Stats(context.Context) (relay.Stats, error) {
	s.done()
	return s.stats, nil
}

// TestMetrics checks the series the runbook alerts on: the backlog gauges come
// from the table's stats, the counters from what the relay published.
func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := relay.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := relay.NewMetrics(reg); err == nil {
		t.Error("registering twice on one registry: got no error, want one")
	}

	ctx, cancel := context.WithCancel(context.Background())
	src := stubStats{stats: relay.Stats{Pending: 7, Dead: 2, OldestPending: 90 * time.Second}, done: cancel}
	if err := relay.RefreshGauges(ctx, src, m, time.Hour, discard()); err != nil {
		t.Fatal(err)
	}

	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := &fakeStore{now: clk.now}
	ids := store.add(3, "payment.created")
	pub := &fakePublisher{fail: map[uuid.UUID]error{ids[0]: errors.New("throttled")}}
	r := relay.New(relay.Config{BatchSize: 10, MaxAttempts: 1}, store, pub, discard(), m, clk.now)
	if _, err := r.Step(context.Background()); err != nil {
		t.Fatal(err)
	}

	got := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			switch {
			case metric.GetGauge() != nil:
				got[f.GetName()] = metric.GetGauge().GetValue()
			case metric.GetCounter() != nil:
				got[f.GetName()] = metric.GetCounter().GetValue()
			case metric.GetHistogram() != nil:
				got[f.GetName()] = float64(metric.GetHistogram().GetSampleCount())
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
		{"outbox_publish_latency_seconds", 2},       // one observation per acknowledged message
		{"outbox_publish_call_duration_seconds", 1}, // one per batch
	}
	for _, tt := range tests {
		if v, ok := got[tt.name]; !ok || v != tt.want {
			t.Errorf("%s: got %v (present %v), want %v", tt.name, v, ok, tt.want)
		}
	}
}
