package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestBenchRunsEndToEndBriefly runs loadgen as `make bench` does, cut to a
// second per phase, so the benchmark cannot rot unnoticed: it builds and starts
// the payments binary, measures the ceiling, the API, the two-phase payment
// and its ceilings, and small relay drains against their ceiling (each after
// its warm-up drain), unordered and ordered, and
// every row must have moved something without an error. It asserts no speed: figures belong in docs/BENCHMARKS.md, not in
// tests.
func TestBenchRunsEndToEndBriefly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the payments binary and loads it for a few seconds")
	}
	dbURL := pgtest.URL(t)
	var out, progress bytes.Buffer
	args := []string{"-database-url", dbURL, "-only", "ceiling,api,relay,twophase", "-d", "1s", "-warmup", "200ms",
		"-c", "4", "-backlog", "2000", "-replicas", "1,2", "-publish-latency", "0", "-ordering", "both"}
	if err := run(context.Background(), args, os.Getenv, &out, &progress); err != nil {
		t.Fatalf("loadgen: %v\n%s", err, progress.String())
	}
	table := out.String()
	for _, scenario := range []string{
		"SQL ceiling: payments + outbox row",
		"POST /payments (relay idle",
		"drain ceiling: the relay's claim and mark, plain pgx, 1 connection(s)",
		"drain ceiling: the relay's claim and mark, plain pgx, 4 connection(s)",
		"relay drain, default, 1 replica(s)",
		"relay drain, default, 2 replica(s)",
		"relay drain, ordered, 2 replica(s)",
		"SQL ceiling, two phases: authorize",
		"SQL ceiling, two phases, capture locking first",
		"POST /payments manual + POST /payments/{id}/capture",
	} {
		line := lineWith(table, scenario)
		if line == "" {
			t.Errorf("no row %q in the table:\n%s", scenario, table)
			continue
		}
		if strings.Contains(line, " 0 req/s") || strings.Contains(line, " 0 rows/s") || strings.Contains(line, " 0 payments/s") {
			t.Errorf("row %q moved nothing: %s", scenario, line)
		}
	}
	if !strings.Contains(progress.String(), "CPU per request") {
		t.Errorf("progress lacks the service's CPU per request:\n%s", progress.String())
	}
	if !strings.Contains(progress.String(), "relay drain, default, 2 replica(s): warming up") {
		t.Errorf("the drains did not warm up first:\n%s", progress.String())
	}
	if strings.Contains(progress.String(), "first error") {
		t.Errorf("a phase had errors:\n%s", progress.String())
	}
}

func lineWith(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
