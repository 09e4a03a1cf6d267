package sqs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// gatedHandler blocks each Apply until the test lets it go, so a test can act
// while a message is in flight.
type gatedHandler struct {
	started chan string
	release chan struct{}
	sqs     *fakeSQS
}

func (h *gatedHandler) Receive(ctx context.Context, body []byte) (inbox.Result, error) {
	h.started <- string(body)
	select {
	case <-h.release:
	case <-ctx.Done(): // the stop's budget ran out: roll back
		return inbox.Result{}, ctx.Err()
	}
	if ctx.Err() != nil {
		return inbox.Result{}, ctx.Err() // the work context must outlive the shutdown
	}
	h.sqs.record("commit " + string(body))
	return inbox.Result{Disposition: inbox.Applied}, nil
}

// runConsumer starts c and returns a function that stops it (a SIGTERM) and
// one that waits for Run to return, failing the test if that takes longer
// than within.
func runConsumer(t *testing.T, c *sqs.Consumer) (stop context.CancelFunc, wait func(within time.Duration)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return cancel, func(within time.Duration) {
		t.Helper()
		select {
		case err := <-done:
			done <- err // for the cleanup
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
		case <-time.After(within):
			t.Fatalf("Run did not return within %s of the stop", within)
		}
	}
}

// waitUntil polls cond until it holds, failing the test after 10 seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline, not synchronising
	}
}

func TestShutdownAppliesTheBatchInHand(t *testing.T) {
	f := newFakeSQS()
	f.put("q", "ok 1", "ok 2", "ok 3")
	h := &gatedHandler{started: make(chan string, 3), release: make(chan struct{}), sqs: f}
	c := sqs.NewConsumer(f, h, "q", logtest.Discard(), sqs.NewMetrics(prometheus.NewRegistry(), "ledger"), time.Now, sqs.Config{Workers: 1, WaitTime: time.Second})
	stop, wait := runConsumer(t, c)

	if got := <-h.started; got != "ok 1" {
		t.Fatalf("first message: got %q", got)
	}
	stop()           // SIGTERM while "ok 1" is being applied
	close(h.release) // its transaction commits after the signal
	wait(10 * time.Second)
	if got := strings.Join(f.deleted["q"], ","); got != "rh-q-0,rh-q-1,rh-q-2" {
		t.Errorf("deleted: got %q, want the whole batch in hand (rh-q-0,rh-q-1,rh-q-2): it was received, so it is applied", got)
	}
	if len(f.released["q"]) != 0 {
		t.Errorf("released: got %v, want nothing: the stop's budget was not exhausted", f.released["q"])
	}
}

func TestStopDrainsTheReceivesInFlight(t *testing.T) {
	f := newFakeSQS()
	reg := prometheus.NewRegistry()
	c := sqs.NewConsumer(f, &fakeHandler{sqs: f}, "q", logtest.Discard(), sqs.NewMetrics(reg, "ledger"), time.Now, sqs.Config{Workers: 3, WaitTime: 2 * time.Second})
	stop, wait := runConsumer(t, c)
	waitUntil(t, "three idle long polls", func() bool { _, waiting := f.polls(); return waiting == 3 })
	called, _ := f.polls()

	stop()                             // SIGTERM while every worker waits in a long poll
	f.put("q", "ok 1", "ok 2", "ok 3") // published while the ledger stops
	wait(10 * time.Second)

	f.mu.Lock()
	defer f.mu.Unlock()
	if f.abandoned != 0 {
		t.Errorf("%d long polls were abandoned by the stop; SQS would still hand them messages", f.abandoned)
	}
	if f.receives != called {
		t.Errorf("receives: %d before the stop, %d after; want no receive started after it", called, f.receives)
	}
	if got := strings.Join(f.deleted["q"], ","); got != "rh-q-0,rh-q-1,rh-q-2" {
		t.Errorf("deleted: got %q, want the three messages the polls in flight returned, applied", got)
	}
	if got := metricValue(t, reg, "ledger_messages_processed_total", "outcome", "applied"); got != 3 {
		t.Errorf("applied: got %v, want 3", got)
	}
}

func TestShutdownTimeoutReleasesWhatIsNotApplied(t *testing.T) {
	f := newFakeSQS()
	f.put("q", "ok 1", "ok 2", "ok 3")
	h := &gatedHandler{started: make(chan string, 3), release: make(chan struct{}), sqs: f} // never released: a stuck transaction
	reg := prometheus.NewRegistry()
	c := sqs.NewConsumer(f, h, "q", logtest.Discard(), sqs.NewMetrics(reg, "ledger"), time.Now, sqs.Config{
		Workers: 1, WaitTime: time.Second, ShutdownTimeout: 200 * time.Millisecond,
	})
	stop, wait := runConsumer(t, c)
	<-h.started
	stop()
	wait(5 * time.Second)

	if len(f.deleted["q"]) != 0 {
		t.Errorf("deleted: got %v, want nothing: nothing committed", f.deleted["q"])
	}
	if got := strings.Join(f.released["q"], ","); got != "rh-q-0,rh-q-1,rh-q-2" {
		t.Errorf("released: got %q, want the rolled-back message and the two never started, visible again at once", got)
	}
	if got := metricValue(t, reg, "ledger_messages_released_total"); got != 3 {
		t.Errorf("ledger_messages_released_total: got %v, want 3", got)
	}
	if got := metricValue(t, reg, "ledger_processing_failures_total", "reason", "error"); got != 0 {
		t.Errorf("a message rolled back by the stop counted as a processing failure (%v)", got)
	}
}

func TestHandlerTimeoutReleasesTheRestOfTheBatch(t *testing.T) {
	f := newFakeSQS()
	f.put("q", "hang 1", "ok 2", "ok 3")
	reg := prometheus.NewRegistry()
	c := sqs.NewConsumer(f, &fakeHandler{sqs: f}, "q", logtest.Discard(), sqs.NewMetrics(reg, "ledger"), time.Now, sqs.Config{
		Workers: 1, WaitTime: time.Second, HandlerTimeout: 100 * time.Millisecond,
	})
	stop, wait := runConsumer(t, c)
	waitUntil(t, "the rest of the batch released", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.released["q"]) == 2
	})
	stop()
	wait(5 * time.Second)

	if got := strings.Join(f.released["q"], ","); got != "rh-q-1,rh-q-2" {
		t.Errorf("released: got %q, want the two messages behind the hung one (rh-q-1,rh-q-2)", got)
	}
	if len(f.deleted["q"]) != 0 {
		t.Errorf("deleted: got %v, want nothing", f.deleted["q"])
	}
	if got := strings.Join(calls(f), "|"); strings.Contains(got, "commit ok") {
		t.Errorf("a message behind the hung one was applied by the same worker: %s", got)
	}
	if got := metricValue(t, reg, "ledger_processing_failures_total", "reason", "error"); got != 1 {
		t.Errorf("processing failures: got %v, want 1 (the hung message, left for redelivery)", got)
	}
}

func TestLongHandlerExtendsVisibility(t *testing.T) {
	f := newFakeSQS()
	f.put("q", "ok 1")
	h := &gatedHandler{started: make(chan string, 1), release: make(chan struct{}), sqs: f}
	c := sqs.NewConsumer(f, h, "q", logtest.Discard(), sqs.NewMetrics(prometheus.NewRegistry(), "ledger"), time.Now, sqs.Config{
		Workers: 1, WaitTime: time.Second, VisibilityTimeout: 2 * time.Second, // extended every second
	})
	stop, wait := runConsumer(t, c)
	<-h.started
	// The handler is still running: wait (with a deadline) for an extension.
	waitUntil(t, "the visibility of a long-running message to be extended", func() bool {
		return strings.Contains(strings.Join(calls(f), "|"), "extend")
	})
	close(h.release)
	stop()
	wait(5 * time.Second)
}

func calls(f *fakeSQS) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}
