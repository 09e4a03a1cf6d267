package cli_test

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/cmd/internal/cli"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr error    // matched with errors.Is
		errText string   // or a part of the error's text; neither: success
		wantOut []string // parts of what was printed
	}{
		{"no arguments", nil, nil, "", nil},
		{"a flag", []string{"--grace", "1s"}, nil, "", nil},
		{"-h", []string{"-h"}, flag.ErrHelp, "", []string{"usage: tool sub [--grace D]\n\ndoes a thing\n", "-grace"}},
		{"--help", []string{"--help"}, flag.ErrHelp, "", []string{"usage: tool sub [--grace D]", "-grace"}},
		{"unknown flag", []string{"--nope"}, nil, "flag provided but not defined: -nope", nil},
		{"stray argument", []string{"extra"}, nil, `unexpected arguments ["extra"]`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			fs := cli.NewFlagSet("tool sub [--grace D]", "does a thing", &out)
			fs.Duration("grace", 0, "how long")
			err := cli.Parse(fs, tt.args)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("got %v, want %v", err, tt.wantErr)
				}
			case tt.errText != "":
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Errorf("got %v, want an error containing %q", err, tt.errText)
				}
			case err != nil:
				t.Errorf("got %v, want nil", err)
			}
			for _, want := range tt.wantOut {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output %q lacks %q", out.String(), want)
				}
			}
		})
	}
}

func TestSubcommand(t *testing.T) {
	var out strings.Builder
	sub, rest, err := cli.Subcommand("group", []string{"run", "--x"}, "tool group run", "does things", "run", &out)
	if err != nil || sub != "run" || len(rest) != 1 || rest[0] != "--x" {
		t.Fatalf("got %q %q %v, want run [--x] nil", sub, rest, err)
	}
	if _, _, err := cli.Subcommand("group", nil, "tool group run", "does things", "run", &out); err == nil || err.Error() != "group: want a subcommand: run" {
		t.Errorf("no subcommand: got %v, want group: want a subcommand: run", err)
	}
	if _, _, err := cli.Subcommand("group", []string{"-h"}, "tool group run", "does things", "run", &out); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: got %v, want flag.ErrHelp", err)
	}
	if !strings.Contains(out.String(), "usage: tool group run\n\ndoes things\n") {
		t.Errorf("-h printed %q, want the group's usage", out.String())
	}
}

func TestUUIDs(t *testing.T) {
	var ids cli.UUIDs
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&ids, "id", "")
	if err := fs.Parse([]string{"--id", "0190F1C2-0000-7000-8000-000000000001", "--id", "0190f1c2-0000-7000-8000-000000000002"}); err != nil {
		t.Fatal(err)
	}
	if got, want := ids.String(), "0190f1c2-0000-7000-8000-000000000001,0190f1c2-0000-7000-8000-000000000002"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if err := fs.Parse([]string{"--id", "nope"}); err == nil || !strings.Contains(err.Error(), `"nope" is not a UUID`) {
		t.Errorf("got %v, want an error naming the value", err)
	}
}
