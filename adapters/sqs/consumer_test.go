package sqs_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// fakeHandler applies bodies by their first word: "ok", "dup", "new-type",
// "poison", "hang" (a database that never answers) or "down" (a transient
// database error). It records what it saw.
type fakeHandler struct {
	mu   sync.Mutex
	seen []string
	sqs  *fakeSQS
}

func (h *fakeHandler) Receive(ctx context.Context, body []byte) (inbox.Result, error) {
	h.mu.Lock()
	h.seen = append(h.seen, string(body))
	h.mu.Unlock()
	h.sqs.record("commit " + string(body))
	switch strings.Fields(string(body))[0] {
	case "ok":
		return inbox.Result{Disposition: inbox.Applied, EventTime: time.Now().Add(-time.Second)}, nil
	case "dup":
		return inbox.Result{Disposition: inbox.Duplicate}, nil
	case "conflict":
		return inbox.Result{MessageID: "m-conflict", Type: "payment.created", Disposition: inbox.Duplicate, Conflicting: true}, nil
	case "long-poison":
		return inbox.Result{}, fmt.Errorf("%w: type %s", inbox.ErrInvalidEvent, strings.Repeat("t", 100_000))
	case "new-type":
		return inbox.Result{Disposition: inbox.Ignored}, nil
	case "poison":
		return inbox.Result{}, fmt.Errorf("decode: %w", inbox.ErrMalformed)
	case "hang":
		<-ctx.Done()
		return inbox.Result{}, ctx.Err()
	default:
		return inbox.Result{}, errors.New("database down")
	}
}

// metricValue reads one counter or gauge from reg.
func metricValue(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

func hasLabels(m *dto.Metric, kv []string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == kv[i] && lp.GetValue() == kv[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func TestConsumerAcksOnlyWhatCommitted(t *testing.T) {
	f := newFakeSQS()
	f.put("q", "ok 1", "poison 2", "dup 3", "down 4", "new-type 5", "ok 6")
	h := &fakeHandler{sqs: f}
	reg := prometheus.NewRegistry()
	c := sqs.NewConsumer(f, h, "q", logtest.Discard(), sqs.NewMetrics(reg, "ledger"), time.Now, sqs.Config{Workers: 1, WaitTime: time.Second})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	<-f.received // the one batch was handed out; the next receive blocks until cancel
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		n := len(f.deleted["q"])
		f.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline, not synchronising
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	if got, want := strings.Join(f.deleted["q"], ","), "rh-q-0,rh-q-2,rh-q-4,rh-q-5"; got != want {
		t.Errorf("deleted: got %s, want %s (ok, dup, new-type, ok; never poison or down)", got, want)
	}
	calls := strings.Join(f.calls, "|")
	if i, j := strings.LastIndex(calls, "commit"), strings.Index(calls, "delete"); j < i {
		t.Errorf("a delete came before the last commit: %s", calls)
	}
	if !strings.Contains(calls, "commit poison 2|visibility0") {
		t.Errorf("the poison message was not made visible again at once: %s", calls)
	}
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"ledger_messages_processed_total", []string{"outcome", "applied"}, 2},
		{"ledger_messages_processed_total", []string{"outcome", "duplicate"}, 1},
		{"ledger_messages_processed_total", []string{"outcome", "ignored"}, 1},
		{"ledger_duplicates_suppressed_total", nil, 1},
		{"ledger_processing_failures_total", []string{"reason", "poison"}, 1},
		{"ledger_processing_failures_total", []string{"reason", "error"}, 1},
		{"ledger_event_age_seconds", nil, 2},
	}
	for _, c := range checks {
		if got := metricValue(t, reg, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v: got %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// TestConsumerWarnsOfAReusedIDAndBoundsWhatItLogs: a message that reused a
// recorded id with another body is acknowledged (the first is kept),
// counted and logged at WARN; an error quoting a forged 100,000-character
// field is logged cut short.
func TestConsumerWarnsOfAReusedIDAndBoundsWhatItLogs(t *testing.T) {
	f := newFakeSQS()
	f.put("q", "conflict 1", "long-poison 2")
	h := &fakeHandler{sqs: f}
	reg := prometheus.NewRegistry()
	var logs strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewJSONHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	c := sqs.NewConsumer(f, h, "q", log, sqs.NewMetrics(reg, "webhooks"), time.Now, sqs.Config{Workers: 1, WaitTime: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	<-f.received
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		f.mu.Lock()
		n := len(f.deleted["q"])
		f.mu.Unlock()
		mu.Lock()
		logged := strings.Contains(logs.String(), "poison message")
		mu.Unlock()
		if n > 0 && logged || time.Now().After(deadline) {
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := strings.Join(f.deleted["q"], ","); got != "rh-q-0" {
		t.Errorf("deleted %s, want the conflicting one acknowledged", got)
	}
	if got := metricValue(t, reg, "webhooks_event_id_conflicts_total"); got != 1 {
		t.Errorf("webhooks_event_id_conflicts_total: %v, want 1", got)
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if !strings.Contains(out, `"level":"WARN","msg":"a message reused a recorded event id with another body; dropped, the first kept"`) {
		t.Errorf("no warning of the reused id:\n%.2000s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 4<<10 {
			t.Errorf("a log line of %d bytes: a forged field logged whole: %.300s…", len(line), line)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestConsumerCountsFailedDeletes(t *testing.T) {
	f := newFakeSQS()
	f.failDel = true
	f.put("q", "ok 1", "ok 2")
	reg := prometheus.NewRegistry()
	c := sqs.NewConsumer(f, &fakeHandler{sqs: f}, "q", logtest.Discard(), sqs.NewMetrics(reg, "ledger"), time.Now, sqs.Config{Workers: 1, WaitTime: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	<-f.received
	deadline := time.Now().Add(10 * time.Second)
	for metricValue(t, reg, "ledger_ack_failures_total") < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if got := metricValue(t, reg, "ledger_ack_failures_total"); got != 2 {
		t.Errorf("ack failures: got %v, want 2", got)
	}
}

func TestRedriveNeverDeletesBeforeSend(t *testing.T) {
	f := newFakeSQS()
	f.put("dlq", "a", "b", "c")
	f.failSend["b"] = true
	rep, err := sqs.Redrive(context.Background(), f, "dlq", "q", logtest.Discard())
	if err != nil {
		t.Fatalf("Redrive: %v", err)
	}
	if rep.Mode != "copy" || rep.Moved != 2 || rep.SendFailed != 1 {
		t.Errorf("report: got %+v, want copy mode, 2 moved, 1 send failed", rep)
	}
	if got, want := strings.Join(f.deleted["dlq"], ","), "rh-dlq-0,rh-dlq-2"; got != want {
		t.Errorf("deleted from dlq: got %s, want %s (b's send failed, so b stays)", got, want)
	}
	var bodies []string
	for _, m := range f.queues["q"] {
		bodies = append(bodies, *m.Body)
	}
	if got := strings.Join(bodies, ","); got != "a,c" {
		t.Errorf("queue: got %s, want a,c", got)
	}
	calls := strings.Join(f.calls, "|")
	if !strings.HasPrefix(calls, "receive|send|delete") {
		t.Errorf("calls: got %s, want receive, send, then delete", calls)
	}
}
