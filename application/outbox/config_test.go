package outbox_test

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/application/outbox"
)

// TestWorkersFor: the relay takes at most half of a shared pool, at least one
// worker and at most its default of four.
func TestWorkersFor(t *testing.T) {
	for _, tt := range []struct{ maxConns, want int }{{1, 1}, {2, 1}, {4, 2}, {7, 3}, {8, 4}, {32, 4}} {
		if got := outbox.WorkersFor(tt.maxConns); got != tt.want {
			t.Errorf("WorkersFor(%d) = %d, want %d", tt.maxConns, got, tt.want)
		}
	}
}
