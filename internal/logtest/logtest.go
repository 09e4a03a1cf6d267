// Package logtest holds the loggers tests share: Discard, for a test that
// reads nothing a component logs, and Buffer, the destination a logger's
// goroutines write to while the test reads. It imports only the standard
// library, so a test in any layer may use it. A test builds no discarding
// logger of its own (conventions_test.go at the repository's root).
package logtest

import (
	"bytes"
	"log/slog"
	"sync"
)

// Discard returns a logger that drops every record without formatting it:
// the logger of a test that asserts on what a component does, not on what
// it logs.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// Buffer is an io.Writer safe to write from several goroutines (a server's,
// a background loop's) while the test reads what they wrote. The zero value
// is an empty buffer.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Len returns how many bytes were written so far.
func (s *Buffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}
