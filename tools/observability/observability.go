// Package observability reads every PromQL query of the Grafana dashboard
// and the Prometheus alert rules that observability/ holds (and
// `docker compose --profile observability up` runs), and the metric names
// they use.
//
// The files are the product; the services' module embeds them, and this
// package, in the tools module with Prometheus' PromQL parser, reads them.
// Its tests run promtool on the rules and the configuration, and
// tools/walkthrough's test checks each query's metric names against what the
// real services expose after the README's walkthrough, so that a renamed
// metric breaks the build instead of a dashboard panel or an alert, silently.
package observability

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	opsfiles "github.com/payments-outbox/payments-outbox/observability"
)

// files are the dashboards and the alert rules, as observability/ holds them.
var files = opsfiles.Files

// Query is one PromQL expression of a dashboard panel or an alert rule.
type Query struct {
	// Where names it for a failure message: the file, and the panel or rule.
	Where string
	// Expr is the expression as written, Grafana variables included.
	Expr string
}

// Queries returns every query of the dashboards (grafana/dashboards) and of
// the alert rules (prometheus/alerts.yml).
func Queries() ([]Query, error) {
	dashboards, err := fs.Glob(files, "grafana/dashboards/*.json")
	if err != nil {
		return nil, err
	}
	var qs []Query
	for _, name := range dashboards {
		b, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		d, err := dashboardQueries(path.Base(name), b)
		if err != nil {
			return nil, err
		}
		qs = append(qs, d...)
	}
	rules, err := Rules()
	if err != nil {
		return nil, err
	}
	for _, r := range rules {
		qs = append(qs, Query{Where: fmt.Sprintf("alerts.yml: %s (severity %s)", r.Alert, r.Labels["severity"]), Expr: r.Expr})
	}
	return qs, nil
}

// panel is what Queries reads of a Grafana panel: rows nest their panels
// when collapsed.
type panel struct {
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

func dashboardQueries(file string, b []byte) ([]Query, error) {
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var qs []Query
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				qs = append(qs, Query{Where: fmt.Sprintf("%s: panel %q, query %s", file, p.Title, t.RefID), Expr: t.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return qs, nil
}

// Rule is one alerting rule of prometheus/alerts.yml.
type Rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// Rules returns the alerting rules of prometheus/alerts.yml, in file order.
func Rules() ([]Rule, error) {
	b, err := files.ReadFile("prometheus/alerts.yml")
	if err != nil {
		return nil, err
	}
	var f struct {
		Groups []struct {
			Rules []Rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("alerts.yml: %w", err)
	}
	var rules []Rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules, nil
}

// grafanaInterval matches the interval variables Grafana replaces before a
// query reaches Prometheus; any of them is a duration there.
var grafanaInterval = regexp.MustCompile(`\$\{?__(rate_interval|interval|range)\}?`)

// Metrics returns the metric names q selects, as Prometheus sees them (a
// histogram's x_bucket, not x), sorted and without repeats. It fails if q
// does not parse, uses a Grafana variable other than an interval, or selects
// series without naming their metric: such a query could not be checked.
func (q Query) Metrics() ([]string, error) {
	expr := grafanaInterval.ReplaceAllString(q.Expr, "5m")
	if strings.Contains(expr, "$") {
		return nil, fmt.Errorf("%s: %q uses a Grafana variable that is not an interval; the test cannot check it", q.Where, q.Expr)
	}
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q.Where, err)
	}
	var names []string
	var bad error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name == "" {
			bad = fmt.Errorf("%s: %s selects no metric by name", q.Where, vs)
		}
		names = append(names, vs.Name)
		return nil
	})
	if bad != nil {
		return nil, bad
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Exposed reads a /metrics answer (Prometheus' text format) and returns the
// families it holds by name, and the series names a query can select:
// a counter's or gauge's name, a histogram's _bucket, _sum and _count.
func Exposed(r io.Reader) (families, series map[string]bool, err error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, nil, err
	}
	families, series = map[string]bool{}, map[string]bool{}
	for name, mf := range mfs {
		families[name] = true
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			series[name+"_bucket"], series[name+"_sum"], series[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			series[name], series[name+"_sum"], series[name+"_count"] = true, true, true
		default:
			series[name] = true
		}
	}
	return families, series, nil
}

// Family returns the metric family a series name belongs to, given the
// families exposed: x for x_bucket when x is a family, else the name itself.
func Family(series string, families map[string]bool) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(series, suffix); ok && families[base] {
			return base
		}
	}
	return series
}
