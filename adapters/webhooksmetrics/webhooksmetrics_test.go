package webhooksmetrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/webhooksmetrics"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// TestWebhooksSeries checks the names the alerts and the dashboard read,
// and that an endpoint leaving the top loses its series.
func TestWebhooksSeries(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := webhooksmetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Attempted("delivered", 20*time.Millisecond)
	m.Attempted("timeout", time.Second)
	m.Disabled("gone")
	m.Backlog(webhooks.DeliveryStats{Pending: 3, Parked: 1, OldestUndelivered: time.Minute,
		Endpoints: []webhooks.EndpointLag{{EndpointID: "we_a", OldestUndelivered: time.Minute}, {EndpointID: "we_b", OldestUndelivered: time.Second}}})
	m.Backlog(webhooks.DeliveryStats{Pending: 1, Parked: 1, OldestUndelivered: 2 * time.Second,
		Endpoints: []webhooks.EndpointLag{{EndpointID: "we_b", OldestUndelivered: 2 * time.Second}}})

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
			case metric.Counter != nil:
				got[name] = metric.Counter.GetValue()
			case metric.Gauge != nil:
				got[name] = metric.Gauge.GetValue()
			case metric.Histogram != nil:
				got[name] = float64(metric.Histogram.GetSampleCount())
			}
		}
	}
	want := map[string]float64{
		"webhooks_attempts_total{delivered}": 1, "webhooks_attempts_total{failed}": 0, "webhooks_attempts_total{gone}": 0,
		"webhooks_attempts_total{timeout}": 1, "webhooks_attempts_total{refused}": 0,
		"webhooks_attempt_duration_seconds{delivered}": 1,
		"webhooks_endpoints_disabled_total{gone}":      1, "webhooks_endpoints_disabled_total{failing}": 0,
		"webhooks_deliveries_pending": 1, "webhooks_deliveries_parked": 1, "webhooks_oldest_undelivered_age_seconds": 2,
		"webhooks_endpoint_oldest_undelivered_age_seconds{we_b}": 2,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: got %v (present: %v), want %v", k, g, ok, v)
		}
	}
	if _, ok := got["webhooks_endpoint_oldest_undelivered_age_seconds{we_a}"]; ok {
		t.Error("we_a left the top and kept its series")
	}
}
