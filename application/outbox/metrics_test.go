package outbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/outboxtest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// recordingMetrics is an outbox.Metrics that keeps what it was told.
type recordingMetrics struct {
	mu          sync.Mutex
	calls       int
	published   []time.Duration
	failed      int
	dead        int
	backlog     outbox.Stats
	backlogSets int
	batchSizes  []int
}

func (m *recordingMetrics) PublishCall(time.Duration) { m.mu.Lock(); m.calls++; m.mu.Unlock() }
func (m *recordingMetrics) Published(d time.Duration) {
	m.mu.Lock()
	m.published = append(m.published, d)
	m.mu.Unlock()
}
func (m *recordingMetrics) PublishFailed() { m.mu.Lock(); m.failed++; m.mu.Unlock() }
func (m *recordingMetrics) Dead()          { m.mu.Lock(); m.dead++; m.mu.Unlock() }
func (m *recordingMetrics) Backlog(s outbox.Stats) {
	m.mu.Lock()
	m.backlog = s
	m.backlogSets++
	m.mu.Unlock()
}

func (m *recordingMetrics) BatchSize(n int) {
	m.mu.Lock()
	m.batchSizes = append(m.batchSizes, n)
	m.mu.Unlock()
}

func (m *recordingMetrics) sizes() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int(nil), m.batchSizes...)
}

type stubStats struct {
	stats outbox.Stats
	done  func() // called after the first read, to end the loop
}

func (s stubStats) Stats(context.Context) (outbox.Stats, error) {
	s.done()
	return s.stats, nil
}

// TestMetrics checks what the relay reports behind the series the runbook
// alerts on: the backlog comes from the table's stats, the counters from what
// the relay published. (adapters/metrics turns these into Prometheus series.)
func TestMetrics(t *testing.T) {
	t.Parallel()
	m := &recordingMetrics{}

	ctx, cancel := context.WithCancel(context.Background())
	want := outbox.Stats{Pending: 7, Dead: 2, OldestPending: 90 * time.Second}
	if err := outbox.RefreshGauges(ctx, stubStats{stats: want, done: cancel}, m, time.Hour, logtest.Discard()); err != nil {
		t.Fatal(err)
	}
	if m.backlogSets != 1 || m.backlog.Pending != want.Pending || m.backlog.Dead != want.Dead || m.backlog.OldestPending != want.OldestPending {
		t.Errorf("backlog: got %+v (%d reports), want %+v once", m.backlog, m.backlogSets, want)
	}

	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	store := outboxtest.NewFakeStore(clk.now)
	ids := store.Add(3, "payment.created")
	clk.advance(2 * time.Second) // the events committed two seconds before the publish
	pub := &fakePublisher{fail: map[uuid.UUID]error{ids[0]: errors.New("throttled")}}
	r := outbox.NewRelay(store, pub, logtest.Discard(), m, clk.now, outbox.Config{BatchSize: 10, MaxAttempts: 1})
	if _, err := r.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m.calls != 1 || m.failed != 1 || m.dead != 1 || len(m.published) != 2 {
		t.Errorf("got %d calls, %d published, %d failed, %d dead; want 1 call (one batch), 2, 1, 1",
			m.calls, len(m.published), m.failed, m.dead)
	}
	for _, d := range m.published {
		if d != 2*time.Second {
			t.Errorf("published latency: got %v, want 2s (commit to acknowledgement)", d)
		}
	}
}

// TestNilMetricsRecordNothing: a relay built without metrics (tests,
// benchmarks, tools) runs as usual.
func TestNilMetricsRecordNothing(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Now()}
	store := outboxtest.NewFakeStore(clk.now)
	store.Add(2, "payment.created")
	r := outbox.NewRelay(store, &fakePublisher{}, logtest.Discard(), nil, clk.now, outbox.Config{BatchSize: 10})
	if n, err := r.Step(context.Background()); err != nil || n != 2 {
		t.Fatalf("Step: got %d, %v; want 2, nil", n, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := outbox.RefreshGauges(ctx, stubStats{done: cancel}, nil, time.Hour, logtest.Discard()); err != nil {
		t.Fatal(err)
	}
}
