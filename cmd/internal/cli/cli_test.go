package cli_test

import (
	"errors"
	"flag"
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
