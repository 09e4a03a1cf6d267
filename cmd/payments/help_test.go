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
	tests := []struct {
		command []string
		usage   string // the first line printed
		flags   []string
	}{
		{nil, "usage: payments [command]", nil},
		{[]string{"serve"}, "usage: payments [serve]", nil},
		{[]string{"migrate"}, "usage: payments migrate", nil},
		{[]string{"outbox"}, "usage: payments outbox stats | requeue --id ID | --all | partitions [--set N]", nil},
		{[]string{"outbox", "partitions"}, "usage: payments outbox partitions [--set N]", []string{"-set int"}},
		{[]string{"outbox", "stats"}, "usage: payments outbox stats", nil},
		{[]string{"outbox", "requeue"}, "usage: payments outbox requeue --id ID | --all", []string{"-id string", "-all"}},
		{[]string{"apikey"}, "usage: payments apikey create | list | revoke", nil},
		{[]string{"apikey", "create"}, "usage: payments apikey create --merchant ID | --platform --name NAME [--key KEY]", []string{"-merchant string", "-platform", "-name string", "-key string"}},
		{[]string{"apikey", "list"}, "usage: payments apikey list", nil},
		{[]string{"apikey", "revoke"}, "usage: payments apikey revoke --id ID", []string{"-id string"}},
		{[]string{"signing-key"}, "usage: payments signing-key create [--id ID]", nil},
		{[]string{"signing-key", "create"}, "usage: payments signing-key create [--id ID]", []string{"-id string"}},
		{[]string{"healthcheck"}, "usage: payments healthcheck", nil},
	}
	for _, tt := range tests {
		for _, help := range []string{"-h", "--help"} {
			args := append(append([]string{}, tt.command...), help)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var out strings.Builder
				if err := run(context.Background(), args, envOf(nil), &out, nil); err != nil {
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
	if err := run(context.Background(), []string{"migrate", "--nope"}, envOf(nil), &strings.Builder{}, nil); err == nil {
		t.Error("migrate --nope: got nil, want an error naming the flag")
	}
}
