package main

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/tools/observability"
)

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
			if !series[n] {
				t.Errorf("%s reads %s, which neither service exposes", q.Where, n)
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
