package claimloop_test

import (
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/claimloop"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	base, ceiling := time.Second, time.Minute
	tests := []struct {
		attempts int
		rnd      float64
		want     time.Duration
	}{
		{attempts: 1, rnd: 0, want: 500 * time.Millisecond},
		{attempts: 1, rnd: 0.999999999, want: time.Second},
		{attempts: 2, rnd: 0, want: time.Second},
		{attempts: 3, rnd: 0.5, want: 3 * time.Second},
		{attempts: 7, rnd: 0, want: 30 * time.Second},    // 64s capped to 60s
		{attempts: 1000, rnd: 0, want: 30 * time.Second}, // no overflow
		{attempts: 1000, rnd: 0.5, want: 45 * time.Second},
	}
	for _, tt := range tests {
		got := claimloop.Backoff(tt.attempts, base, ceiling, tt.rnd)
		if got.Round(time.Millisecond) != tt.want {
			t.Errorf("Backoff(%d, rnd=%v): got %v, want %v", tt.attempts, tt.rnd, got, tt.want)
		}
	}
}

func TestScheduleStaysWithinItsStep(t *testing.T) {
	t.Parallel()
	s := claimloop.NewSchedule(time.Second, time.Minute)
	for attempts := 1; attempts < 10; attempts++ {
		step := min(time.Second<<(attempts-1), time.Minute)
		for range 50 {
			if d := s.Delay(attempts); d < step/2 || d > step {
				t.Fatalf("Delay(%d) = %s, want within [%s, %s]", attempts, d, step/2, step)
			}
		}
	}
}

func TestStatsWait(t *testing.T) {
	t.Parallel()
	tests := []struct{ every, took, want time.Duration }{
		{10 * time.Second, 10 * time.Millisecond, 10 * time.Second},
		{10 * time.Second, time.Second, 50 * time.Second},
		{10 * time.Second, 10 * time.Second, time.Minute},
		{2 * time.Minute, 10 * time.Second, 2 * time.Minute},
	}
	for _, tt := range tests {
		if got := claimloop.StatsWait(tt.every, tt.took); got != tt.want {
			t.Errorf("StatsWait(%s, %s): got %s, want %s", tt.every, tt.took, got, tt.want)
		}
	}
}
