package outbox

import (
	"testing"
	"time"
)

// TestBatchSizeAdapts: halved after a late batch, never below 1; one more
// after each full batch in time, never above the ceiling; a batch that was
// not full says nothing about the size and leaves it.
func TestBatchSizeAdapts(t *testing.T) {
	b := newBatchSize(8)
	steps := []struct {
		n    int
		late bool
		want int
	}{
		{8, true, 4},  // late: halved
		{4, false, 5}, // full and in time: one more
		{3, false, 5}, // not full: no news
		{5, true, 2},
		{2, true, 1},
		{1, true, 1}, // never below one row
		{1, false, 2},
	}
	for i, s := range steps {
		limit := b.get()
		if got, _ := b.adapt(limit, s.n, s.late); got != s.want {
			t.Fatalf("step %d (claim of %d, %d claimed, late %v): size %d, want %d", i, limit, s.n, s.late, got, s.want)
		}
	}
	for range 20 {
		b.adapt(b.get(), b.get(), false)
	}
	if got := b.get(); got != 8 {
		t.Errorf("after 20 full batches in time: size %d, want the ceiling 8", got)
	}
}

// TestLateBatchesTogetherHalveOnce: workers whose batches, claimed at the
// same size, ran late together halve the size once, not once each.
func TestLateBatchesTogetherHalveOnce(t *testing.T) {
	b := newBatchSize(100)
	for range 4 { // four workers, each with a batch of 100 that ran late
		b.adapt(100, 100, true)
	}
	if got := b.get(); got != 50 {
		t.Errorf("size %d after four late batches of 100, want 50", got)
	}
}

// TestPublishDeadlineLeavesTimeToWrite: the publish ends a quarter of the
// timeout before the claim's deadline.
func TestPublishDeadlineLeavesTimeToWrite(t *testing.T) {
	end := time.Date(2026, 12, 6, 10, 0, 10, 0, time.UTC)
	if got, want := publishDeadline(end, 10*time.Second), end.Add(-2500*time.Millisecond); !got.Equal(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
