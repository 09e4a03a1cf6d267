package relay

import (
	"testing"
	"time"
)

func TestStatsWaitGrowsWithTheCountsCost(t *testing.T) {
	tests := []struct {
		name       string
		took, want time.Duration
	}{
		{"a cheap count keeps the interval", 2 * time.Millisecond, 5 * time.Second},
		{"a 200 ms count (a big backlog) waits 10 s", 200 * time.Millisecond, 10 * time.Second},
		{"a very slow count is capped at a minute", 5 * time.Second, time.Minute},
	}
	for _, tt := range tests {
		if got := statsWait(5*time.Second, tt.took); got != tt.want {
			t.Errorf("%s: statsWait(5s, %v) = %v, want %v", tt.name, tt.took, got, tt.want)
		}
	}
}
