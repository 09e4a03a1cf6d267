package retention

import (
	"testing"
	"time"
)

func TestJitterStaysWithinATenth(t *testing.T) {
	tests := []struct {
		rnd  float64
		want time.Duration
	}{
		{0, 54 * time.Minute},
		{0.5, time.Hour},
		{0.999999, 66*time.Minute - 720*time.Microsecond},
	}
	for _, tt := range tests {
		if got := jitter(time.Hour, tt.rnd); got != tt.want {
			t.Errorf("jitter(1h, %v) = %v, want %v", tt.rnd, got, tt.want)
		}
	}
}
