// Package envconfig reads a service's environment into typed values for the
// services' config loaders. It keeps the first error, which names the
// variable and says what was wanted, so a loader reads like a table and a bad
// deployment stops with one clear line.
package envconfig

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Reader reads variables through getenv and remembers the first problem.
type Reader struct {
	getenv func(string) string
	err    error
}

// New returns a Reader over getenv (os.Getenv in main, a map in tests).
func New(getenv func(string) string) *Reader { return &Reader{getenv: getenv} }

// Err returns the first problem found, or nil.
func (r *Reader) Err() error { return r.err }

// Fail records err unless an earlier problem was found; for rules that span
// several variables.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *Reader) invalid(name, value, want string) {
	r.Fail(fmt.Errorf("%s=%q is invalid: %s", name, value, want))
}

// String returns the variable, or def when it is unset or blank.
func (r *Reader) String(name, def string) string {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return v
	}
	return def
}

// Required returns the variable, recording "NAME is required" when it is
// unset or blank.
func (r *Reader) Required(name string) string {
	v := r.String(name, "")
	if v == "" {
		r.Fail(fmt.Errorf("%s is required", name))
	}
	return v
}

// Bool parses true/false (and strconv.ParseBool's other spellings).
func (r *Reader) Bool(name string, def bool) bool {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.invalid(name, v, "want true or false")
	}
	return b
}

// Int parses an integer from lo to hi inclusive.
func (r *Reader) Int(name string, def, lo, hi int) int {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		r.invalid(name, v, fmt.Sprintf("want an integer from %d to %d", lo, hi))
	}
	return n
}

// Int64 parses an integer from lo to hi inclusive, in the whole int64
// range: an amount of money in minor units.
func (r *Reader) Int64(name string, def, lo, hi int64) int64 {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		r.invalid(name, v, fmt.Sprintf("want an integer from %d to %d", lo, hi))
	}
	return n
}

// Duration parses a positive Go duration such as 1s or 168h.
func (r *Reader) Duration(name string, def time.Duration) time.Duration {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.invalid(name, v, "want a positive Go duration such as 1s or 168h")
	}
	return d
}

// Level parses a log level: debug, info, warn or error.
func (r *Reader) Level(name string, def slog.Level) slog.Level {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		r.invalid(name, v, "want debug, info, warn or error")
	}
	return l
}
