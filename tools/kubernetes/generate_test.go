package kubernetes

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGeneratedFilesAreCurrent fails when a generated file of
// deploy/kubernetes differs from what its sources generate now: an alert
// rule, a dashboard, the init script or the SQL changed and the manifests
// were not generated again.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(root, f.Path))
		if err != nil {
			t.Errorf("%s: %v; run go -C tools run ./kubernetes/gen", f.Path, err)
			continue
		}
		if !bytes.Equal(got, f.Content) {
			t.Errorf("%s is stale: run go -C tools run ./kubernetes/gen and commit it", f.Path)
		}
	}
}

// TestGeneratedObjectsDecode: the generated files are Kubernetes objects
// (the PrometheusRule in the operator's type), and every rule of alerts.yml
// reaches the PrometheusRule.
func TestGeneratedObjectsDecode(t *testing.T) {
	files, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Decode(files[0].Content)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Rules) != 1 || len(o.ConfigMaps) != 1 {
		t.Fatalf("got %d PrometheusRules and %d ConfigMaps, want one of each", len(o.Rules), len(o.ConfigMaps))
	}
	alerts, err := os.ReadFile(filepath.Join(root, "observability/prometheus/alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	want := len(regexp.MustCompile(`(?m)^\s+- (alert|record):`).FindAll(alerts, -1))
	got := 0
	for _, g := range o.Rules[0].Spec.Groups {
		got += len(g.Rules)
	}
	if got != want || want == 0 {
		t.Errorf("the PrometheusRule has %d rules, alerts.yml %d", got, want)
	}
	for name, dash := range o.ConfigMaps["payments-outbox-dashboards"].Data {
		if !strings.HasSuffix(name, ".json") || !json.Valid([]byte(dash)) {
			t.Errorf("dashboard %s is not a JSON file", name)
		}
	}
}
