package main

import (
	"context"
	"strings"
	"testing"
)

// TestEveryCommandHasHelp: -h and --help of every command print its usage to
// stdout and succeed (exit status 0), with no configuration at all.
func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	tests := []struct {
		command []string
		usage   string // the first line printed
		flags   []string
	}{
		{nil, "usage: ledger [command]", nil},
		{[]string{"serve"}, "usage: ledger [serve]", nil},
		{[]string{"migrate"}, "usage: ledger migrate", nil},
		{[]string{"dlq"}, "usage: ledger dlq redrive", nil},
		{[]string{"dlq", "redrive"}, "usage: ledger dlq redrive", nil},
		{[]string{"reconcile"}, "usage: ledger reconcile [--payments-database-url URL] [--grace 1m]", []string{"-payments-database-url string", "-grace duration"}},
		{[]string{"healthcheck"}, "usage: ledger healthcheck", nil},
		{[]string{"inbox"}, "usage: ledger inbox process [--once] | stats | retry --id ID | --all-parked", nil},
		{[]string{"inbox", "process"}, "usage: ledger inbox process [--once]", []string{"-once"}},
		{[]string{"inbox", "stats"}, "usage: ledger inbox stats", nil},
		{[]string{"inbox", "retry"}, "usage: ledger inbox retry --id ID [--id ID ...] | --all-parked", []string{"-id value", "-all-parked"}},
	}
	for _, tt := range tests {
		for _, help := range []string{"-h", "--help"} {
			args := append(append([]string{}, tt.command...), help)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var out strings.Builder
				if err := run(context.Background(), args, noEnv, &out, nil); err != nil {
					t.Fatalf("got %v, want nil (exit status 0)", err)
				}
				if first, _, _ := strings.Cut(out.String(), "\n"); first != tt.usage {
					t.Errorf("first line: got %q, want %q", first, tt.usage)
				}
				for _, f := range tt.flags {
					if !strings.Contains(out.String(), f) {
						t.Errorf("usage %q does not list %s", out.String(), f)
					}
				}
			})
		}
	}
	if err := run(context.Background(), []string{"reconcile", "--nope"}, noEnv, &strings.Builder{}, nil); err == nil {
		t.Error("reconcile --nope: got nil, want an error naming the flag")
	}
}
