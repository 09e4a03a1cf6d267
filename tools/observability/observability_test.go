package observability

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// dir is observability/, where the files are, from this package's directory.
const dir = "../../observability/"

// promtool returns the path of Prometheus' promtool (Debian's prometheus
// package ships it; .ci/run installs it). Without it the test skips, and
// fails under CI: CI must never go green by skipping.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but promtool is not installed; .ci/run installs Debian's prometheus package")
		}
		t.Skip("promtool not installed: install Prometheus' promtool (Debian: apt-get install prometheus) to test the rules")
	}
	return p
}

func runPromtool(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir + "prometheus" // rule_files are relative to the file naming them
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// The rules and the configuration are valid for Prometheus, and every rule
// fires and stays quiet where alerts_test.yml says it must.
func TestPromtool(t *testing.T) {
	t.Run("check config", func(t *testing.T) { runPromtool(t, "check", "config", "prometheus.yml") })
	t.Run("check rules", func(t *testing.T) { runPromtool(t, "check", "rules", "alerts.yml") })
	t.Run("test rules", func(t *testing.T) { runPromtool(t, "test", "rules", "alerts_test.yml") })
}

// ruleKey names one rule: an alert may have several, one per severity.
func ruleKey(alert, severity string) string { return alert + " (severity " + severity + ")" }

// Every rule has a case in alerts_test.yml where it fires and one where it
// does not: an alert that cannot fire is as useless as one that always does.
func TestEveryRuleHasAFiringAndAQuietCase(t *testing.T) {
	rules, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dir + "prometheus/alerts_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []struct {
					ExpLabels map[string]string `yaml:"exp_labels"`
				} `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, at := range tc.AlertRuleTest {
			firing := map[string]bool{}
			for _, a := range at.ExpAlerts {
				firing[a.ExpLabels["severity"]] = true
			}
			for _, r := range rules {
				if r.Alert != at.Alertname {
					continue
				}
				k := ruleKey(r.Alert, r.Labels["severity"])
				if firing[r.Labels["severity"]] {
					fires[k] = true
				} else {
					quiet[k] = true
				}
			}
		}
	}
	if len(rules) == 0 {
		t.Fatal("alerts.yml has no rules")
	}
	for _, r := range rules {
		k := ruleKey(r.Alert, r.Labels["severity"])
		if !fires[k] {
			t.Errorf("alerts_test.yml has no case where %s fires", k)
		}
		if !quiet[k] {
			t.Errorf("alerts_test.yml has no case where %s stays quiet", k)
		}
	}
}

// Every rule says how urgent it is, in the words of docs/OPERATIONS.md, and
// links the runbook section that says what to do, which must exist.
func TestRulesLinkTheRunbook(t *testing.T) {
	rules, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{}
	for _, r := range rules {
		k := ruleKey(r.Alert, r.Labels["severity"])
		if s := r.Labels["severity"]; s != "warn" && s != "page" {
			t.Errorf("%s: severity %q, want warn or page (the words of docs/OPERATIONS.md)", k, s)
		}
		if r.Annotations["summary"] == "" {
			t.Errorf("%s has no summary", k)
		}
		file, anchor, ok := strings.Cut(r.Annotations["runbook_url"], "#")
		if !ok || anchor == "" {
			t.Errorf("%s: runbook_url %q, want docs/RUNBOOK.md#section", k, r.Annotations["runbook_url"])
			continue
		}
		if anchors[file] == nil {
			b, err := os.ReadFile("../../" + file)
			if err != nil {
				t.Errorf("%s: runbook_url names %s: %v", k, file, err)
				continue
			}
			anchors[file] = headingAnchors(string(b))
		}
		if !anchors[file][anchor] {
			t.Errorf("%s: runbook_url %s#%s: %s has no heading with that anchor", k, file, anchor, file)
		}
	}
}

// headingAnchors returns the anchors GitHub gives a Markdown file's headings:
// lower case, punctuation dropped, spaces as hyphens, repeats numbered.
func headingAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

func TestHeadingAnchors(t *testing.T) {
	got := headingAnchors("# Operations runbook\n## The outbox is not draining (oldest pending age rising)\n```\n# not a heading\n```\n## DEAD outbox rows\n## DEAD outbox rows\n")
	for _, want := range []string{"operations-runbook", "the-outbox-is-not-draining-oldest-pending-age-rising", "dead-outbox-rows", "dead-outbox-rows-1"} {
		if !got[want] {
			t.Errorf("no anchor %s in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a line in a code block counted as a heading")
	}
}

// The "What to monitor" table of docs/OPERATIONS.md is what the rules
// implement: every metric it says to alert on is in a rule.
func TestRulesCoverTheMonitoringTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## What to monitor\n")
	if !ok {
		t.Fatal("docs/OPERATIONS.md has no \"What to monitor\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var table []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(first, -1) {
			table = append(table, m[1])
		}
	}
	if len(table) < 5 {
		t.Fatalf("found %v in the \"What to monitor\" table of docs/OPERATIONS.md; the test reads the wrong lines", table)
	}
	rules, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	var used []string
	for _, r := range rules {
		names, err := Query{Where: r.Alert, Expr: r.Expr}.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			used = append(used, n, strings.TrimSuffix(n, "_bucket"))
		}
	}
	for _, m := range table {
		if !slices.Contains(used, m) {
			t.Errorf("docs/OPERATIONS.md says to alert on %s; no rule in alerts.yml does", m)
		}
	}
}

// Every query parses and names the metrics it selects; the metric names
// themselves are checked against the running services in tools/walkthrough.
func TestQueriesParse(t *testing.T) {
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	var dashboard, rules int
	for _, q := range qs {
		if strings.HasPrefix(q.Where, "alerts.yml") {
			rules++
		} else {
			dashboard++
		}
		if _, err := q.Metrics(); err != nil {
			t.Error(err)
		}
	}
	if dashboard < 15 || rules < 5 {
		t.Errorf("found %d dashboard and %d rule queries; the loader misses some", dashboard, rules)
	}
	for _, bad := range []Query{
		{"unparsable", "rate(x[5m]"},
		{"no name", `sum(rate({job="payments"}[5m]))`},
		{"unknown variable", `sum(rate(x{job="$job"}[5m]))`},
	} {
		if _, err := bad.Metrics(); err == nil {
			t.Errorf("%s: %q passed", bad.Where, bad.Expr)
		}
	}
	got, err := Query{"ok", `histogram_quantile(0.99, sum by (le) (rate(a_bucket[$__rate_interval]))) / on() b + a_bucket`}.Metrics()
	if err != nil || !slices.Equal(got, []string{"a_bucket", "b"}) {
		t.Errorf("Metrics = %v, %v; want [a_bucket b]", got, err)
	}
}

// The dashboard is one Grafana can load as provisioned: every panel reads
// the data source variable (so a fork's Grafana can pick its own
// Prometheus), ids are unique, and no two panels overlap.
func TestDashboardIsWellFormed(t *testing.T) {
	b, err := os.ReadFile(dir + "grafana/dashboards/payments-outbox.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct{ Name, Type, Query string }
		} `json:"templating"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource *struct {
				Type, UID string
			} `json:"datasource"`
			GridPos struct{ X, Y, W, H int } `json:"gridPos"`
			Targets []struct {
				RefID      string `json:"refId"`
				Datasource *struct{ UID string }
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" {
		t.Error("the dashboard has no uid: links to it would break on every load")
	}
	if !slices.ContainsFunc(d.Templating.List, func(v struct{ Name, Type, Query string }) bool {
		return v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus"
	}) {
		t.Error("the dashboard has no datasource variable of type prometheus")
	}
	ids := map[int]bool{}
	var cells [][4]int
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v does not fit the 24-column grid", p.Title, g)
		}
		for _, c := range cells {
			if g.X < c[0]+c[2] && c[0] < g.X+g.W && g.Y < c[1]+c[3] && c[1] < g.Y+g.H {
				t.Errorf("panel %q at %+v overlaps another panel", p.Title, g)
			}
		}
		cells = append(cells, [4]int{g.X, g.Y, g.W, g.H})
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not read the ${datasource} variable", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if refs[tg.RefID] || tg.RefID == "" {
				t.Errorf("panel %q: refId %q empty or repeated", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q, query %s does not read the ${datasource} variable", p.Title, tg.RefID)
			}
		}
	}
}
