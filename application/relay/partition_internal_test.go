package relay

import (
	"context"
	"slices"
	"testing"
)

// TestWorkersSplitTheOwnedPartitions: a sweep claims every owned partition
// at once, each worker claims every Workers-th of them, drains them one
// partition to a claim, and a worker with none claims nothing.
func TestWorkersSplitTheOwnedPartitions(t *testing.T) {
	t.Parallel()
	var claimed [][]int
	s := workerShares{
		workers: 3,
		owned:   func() (int, []int) { return 8, []int{1, 2, 4, 5, 7} },
		step: func(_ context.Context, partitions int, parts []int) (int, error) {
			if partitions != 8 {
				t.Errorf("claim by %d partitions, want 8", partitions)
			}
			claimed = append(claimed, parts)
			return 0, nil
		},
	}
	claim := func(step func(context.Context) (int, error)) []int {
		t.Helper()
		claimed = nil
		if _, err := step(context.Background()); err != nil {
			t.Fatal(err)
		}
		return claimed[0]
	}
	if got := claim(s.Sweep()); !slices.Equal(got, []int{1, 2, 4, 5, 7}) {
		t.Errorf("sweep claims %v, want every owned partition", got)
	}
	for w, want := range [][]int{{1, 5}, {2, 7}, {4}} {
		if got := claim(s.Own(w)); !slices.Equal(got, want) {
			t.Errorf("worker %d claims %v, want %v", w, got, want)
		}
		drain := s.Drain(w)
		if len(drain) != len(want) {
			t.Fatalf("worker %d drains in %d claims, want %d (one per partition)", w, len(drain), len(want))
		}
		for i, step := range drain {
			if got := claim(step); !slices.Equal(got, want[i:i+1]) {
				t.Errorf("worker %d's drain claim %d: %v, want %v", w, i, got, want[i:i+1])
			}
		}
	}
	s.workers = 6
	if s.Own(5) != nil || len(s.Drain(5)) != 0 {
		t.Error("a worker with no partitions has a claim, want none")
	}
	s.owned = func() (int, []int) { return 8, nil }
	if s.Sweep() != nil {
		t.Error("a sweep with no partitions owned has a claim, want none")
	}
}
