package envconfig

import (
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"
)

func TestReader(t *testing.T) {
	env := map[string]string{"S": " x ", "B": "false", "I": "7", "I64": "9223372036854775807", "D": "90s", "L": "debug"}
	r := New(func(k string) string { return env[k] })
	if got := r.String("S", "d"); got != "x" {
		t.Errorf("String = %q, want x", got)
	}
	if got := r.String("UNSET", "d"); got != "d" {
		t.Errorf("String default = %q, want d", got)
	}
	if got := r.Bool("B", true); got {
		t.Error("Bool = true, want false")
	}
	if got := r.Int("I", 1, 1, 10); got != 7 {
		t.Errorf("Int = %d, want 7", got)
	}
	if got := r.Int64("I64", 1, 1, math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("Int64 = %d, want %d", got, int64(math.MaxInt64))
	}
	if got := r.Duration("D", time.Second); got != 90*time.Second {
		t.Errorf("Duration = %s, want 90s", got)
	}
	if got := r.Level("L", slog.LevelInfo); got != slog.LevelDebug {
		t.Errorf("Level = %s, want DEBUG", got)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestReaderKeepsTheFirstError(t *testing.T) {
	tests := []struct {
		name string
		read func(*Reader)
		want string
	}{
		{"required", func(r *Reader) { r.Required("NEED") }, "NEED is required"},
		{"bool", func(r *Reader) { r.Bool("V", false) }, `V="nope" is invalid`},
		{"int not a number", func(r *Reader) { r.Int("V", 1, 1, 9) }, `V="nope" is invalid: want an integer from 1 to 9`},
		{"duration", func(r *Reader) { r.Duration("V", time.Second) }, `V="nope" is invalid`},
		{"level", func(r *Reader) { r.Level("V", slog.LevelInfo) }, `V="nope" is invalid`},
		{"out of range", func(r *Reader) { r.Int("BIG", 1, 1, 9) }, `BIG="10" is invalid`},
		{"int64 out of range", func(r *Reader) { r.Int64("BIG", 1, 1, 9) }, `BIG="10" is invalid: want an integer from 1 to 9`},
		{"negative duration", func(r *Reader) { r.Duration("NEG", time.Second) }, `NEG="-1s" is invalid`},
	}
	env := map[string]string{"V": "nope", "BIG": "10", "NEG": "-1s"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(func(k string) string { return env[k] })
			tt.read(r)
			r.Required("LATER") // a later problem must not replace the first
			if err := r.Err(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
