// Package observability holds what an operator looks at — the Grafana
// dashboard, the Prometheus alert rules and the Prometheus configuration that
// `docker compose --profile observability up` runs — and embeds the
// dashboards and the rules for the tests that read every PromQL query in them
// (tools/observability, in the tools module with the PromQL parser).
//
// The files are the product; this package only embeds them.
package observability

import "embed"

// Files holds the Grafana dashboards (grafana/dashboards/*.json) and the
// alert rules (prometheus/alerts.yml).
//
//go:embed grafana/dashboards/*.json prometheus/alerts.yml
var Files embed.FS
