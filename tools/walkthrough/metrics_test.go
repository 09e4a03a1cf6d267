package main

import (
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/tools/observability"
)

// webhooksPrefix is the webhooks service's metrics' prefix. The alerts and
// dashboard read them before this test starts that service: until cmd/webhooks
// exists they are logged here, not failed; once it does, a query of them that
// no scraped service answers fails, saying to start it beside the others.
const webhooksPrefix = "webhooks_"

// runtimeFamilies are the Go runtime's and the process's series, and
// promhttp's own: every Go service has them, the dashboard need not.
var runtimeFamilies = []string{"go_", "process_", "promhttp_"}

// checkQueries scrapes each service's /metrics (ops addresses by service
// name) and checks, both ways, the queries of observability/: every metric
// a dashboard panel or an alert rule reads is one a service exposes (a
// renamed metric would leave a panel empty and an alert silent), and every
// metric a service exposes, the runtime's aside, has a panel.
func checkQueries(t *testing.T, ops map[string]string) {
	t.Helper()
	families, series := map[string]bool{}, map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(ops)) {
		res, err := http.Get("http://" + ops[name] + "/metrics")
		if err != nil {
			t.Fatalf("scrape %s: %v", name, err)
		}
		f, s, err := observability.Exposed(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatalf("%s /metrics: %v", name, err)
		}
		maps.Copy(families, f)
		maps.Copy(series, s)
	}
	queries, err := observability.Queries()
	if err != nil {
		t.Fatal(err)
	}
	onDashboard := map[string]bool{}
	for _, q := range queries {
		names, err := q.Metrics()
		if err != nil {
			t.Error(err)
			continue
		}
		for _, n := range names {
			switch {
			case series[n]:
			case strings.HasPrefix(n, webhooksPrefix) && ops["webhooks"] == "":
				if _, err := os.Stat("../../cmd/webhooks/main.go"); err != nil {
					t.Logf("%s reads %s, a metric of the webhooks service, not checked: cmd/webhooks is not built yet", q.Where, n)
				} else {
					t.Errorf("%s reads %s, a metric of the webhooks service, which this test does not start: start cmd/webhooks in startServices and pass its ops address to checkQueries as \"webhooks\"", q.Where, n)
				}
			default:
				t.Errorf("%s reads %s, which no scraped service (%v) exposes", q.Where, n, slices.Sorted(maps.Keys(ops)))
			}
			if !strings.HasPrefix(q.Where, "alerts.yml") {
				onDashboard[observability.Family(n, families)] = true
			}
		}
	}
	for _, f := range slices.Sorted(maps.Keys(families)) {
		runtime := slices.ContainsFunc(runtimeFamilies, func(p string) bool { return strings.HasPrefix(f, p) })
		if !runtime && !onDashboard[f] {
			t.Errorf("the services expose %s, which no panel of observability/grafana/dashboards shows; add one", f)
		}
	}
}
