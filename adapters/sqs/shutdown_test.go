package sqs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/application/posting"
)

// gatedHandler blocks each Apply until the test lets it go, so a test can act
// while a message is in flight.
type gatedHandler struct {
	started chan string
	release chan struct{}
	sqs     *fakeSQS
}

func (h *gatedHandler) Apply(ctx context.Context, body []byte) (posting.Result, error) {
	h.started <- string(body)
	<-h.release
	if ctx.Err() != nil {
		return posting.Result{}, ctx.Err() // the work context must outlive the shutdown
	}
	h.sqs.record("commit " + string(body))
	return posting.Result{Outcome: posting.Applied}, nil
}

func TestShutdownFinishesInFlightAndLeavesTheRest(t *testing.T) {
	f := newFakeSQS()
	f.put("q", "ok 1", "ok 2", "ok 3")
	h := &gatedHandler{started: make(chan string, 3), release: make(chan struct{}), sqs: f}
	c := sqs.NewConsumer(f, h, sqs.Config{QueueURL: "q", Workers: 1, Log: quietLog(), Metrics: sqs.NewMetrics(prometheus.NewRegistry())})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	if got := <-h.started; got != "ok 1" {
		t.Fatalf("first message: got %q", got)
	}
	cancel()         // SIGTERM while "ok 1" is being applied
	close(h.release) // its transaction commits after the signal
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := strings.Join(f.deleted["q"], ","); got != "rh-q-0" {
		t.Errorf("deleted: got %q, want only the in-flight message (rh-q-0); the rest stay for redelivery", got)
	}
}

func TestLongHandlerExtendsVisibility(t *testing.T) {
	f := newFakeSQS()
	f.put("q", "ok 1")
	h := &gatedHandler{started: make(chan string, 1), release: make(chan struct{}), sqs: f}
	c := sqs.NewConsumer(f, h, sqs.Config{
		QueueURL: "q", Workers: 1, VisibilityTimeout: 200 * time.Millisecond,
		Log: quietLog(), Metrics: sqs.NewMetrics(prometheus.NewRegistry()),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	<-h.started
	// The handler is still running: wait (with a deadline) for an extension.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(strings.Join(calls(f), "|"), "extend") {
		if time.Now().After(deadline) {
			t.Fatal("the visibility of a long-running message was never extended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(h.release)
	cancel()
	<-done
}

func calls(f *fakeSQS) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}
