package main

import (
	"math"
	"slices"
	"time"
)

// latencies is one worker's record of request durations. Each worker owns its
// own slice, so the hot path takes no lock; merge joins them at the end.
type latencies []time.Duration

// summary is what one measured run reports.
type summary struct {
	N             int // successful operations (requests, rows)
	Errors        int
	All           int // every operation the phase finished, warm-up included
	Elapsed       time.Duration
	P50, P95, P99 time.Duration // zero when the run records no latencies
	// ClientCPU is the CPU time the load generator itself used per finished
	// operation (warm-up included): what the client takes from the cores it
	// shares with the server and Postgres.
	ClientCPU time.Duration
	// IndexReadsPerRow is, for a relay drain, the outbox index entries read
	// per row published (Postgres's counters): what the claims step over.
	IndexReadsPerRow float64
	// ServerCPU is, for a relay drain, the CPU time Postgres used per row
	// published (zero when the server is not on this machine); ClientCPU is
	// then the in-process relays' own.
	ServerCPU time.Duration
}

// Rate is successful operations per second.
func (s summary) Rate() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.N) / s.Elapsed.Seconds()
}

// summarize sorts all and fills the percentiles.
func summarize(all []time.Duration, errors int, elapsed time.Duration) summary {
	slices.Sort(all)
	return summary{
		N: len(all), Errors: errors, Elapsed: elapsed,
		P50: percentile(all, 50), P95: percentile(all, 95), P99: percentile(all, 99),
	}
}

func merge(parts []latencies) []time.Duration {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	all := make([]time.Duration, 0, n)
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// percentile is the nearest-rank percentile p (0 < p <= 100) of sorted: the
// smallest value with at least p% of the values at or below it. No
// interpolation, so the figure is always a latency that was observed.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// spread is the median of several repetitions and their range, so a reader
// of the table sees how noisy the machine was.
type spread struct {
	Median, Min, Max float64
	N                int
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// medianDuration is the median of ds (the upper one for an even count, which
// errs on the side of the slower figure).
func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
