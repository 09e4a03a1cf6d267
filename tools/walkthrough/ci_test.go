package main

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// ciWorkflow is the GitHub workflow a fork runs: its compose job runs `make
// demo` and then checks what the walkthrough left.
const ciWorkflow = "../../.github/workflows/ci.yml"

// ciFigures returns the balances the workflow's compose job wants after the
// walkthrough, by account: its `test "$merchant" = N` and `test "$payer" =
// N` lines.
func ciFigures(t *testing.T) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(ciWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for variable, account := range map[string]string{"merchant": merchantAccount, "payer": payerAccount} {
		m := regexp.MustCompile(`test "\$` + variable + `" = (-?[0-9]+)\n`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s has no line `test \"$%s\" = N`: where does it check %s?", ciWorkflow, variable, account)
		}
		n, err := strconv.ParseInt(string(m[1]), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out[account] = n
	}
	return out
}

// The workflow's compose job wants every job Prometheus scrapes up: its
// list is observability/prometheus/prometheus.yml's, so a service added to
// one is not forgotten in the other.
func TestCIWorkflowWantsEveryScrapeJob(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../observability/prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var prom struct {
		ScrapeConfigs []struct {
			JobName string `yaml:"job_name"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &prom); err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, c := range prom.ScrapeConfigs {
		jobs = append(jobs, strconv.Quote(c.JobName))
	}
	slices.Sort(jobs)
	if len(jobs) < 3 {
		t.Fatalf("prometheus.yml scrapes %v: the test reads the wrong file", jobs)
	}
	w, err := os.ReadFile(ciWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\.labels\.job\] \| sort == \[([^\]]*)\]`).FindSubmatch(w)
	if m == nil {
		t.Fatalf("%s checks no list of Prometheus jobs (`.labels.job] | sort == [...]`)", ciWorkflow)
	}
	want := "[" + strings.Join(jobs, ", ") + "]"
	if got := "[" + string(m[1]) + "]"; got != want {
		t.Errorf("%s wants the jobs %s up; prometheus.yml scrapes %s", ciWorkflow, got, want)
	}
}
