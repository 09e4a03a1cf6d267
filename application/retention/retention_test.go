package retention_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/retention"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// table is an in-memory table of rows to expire, for the DeleteFunc under
// test: rows older than the cutoff go, at most limit per call.
type table struct {
	mu      sync.Mutex
	old     int         // rows older than any cutoff the tests use
	calls   int         // DeleteFunc calls so far
	cutoffs []time.Time // the cutoff of each call
	failAt  map[int]error
	onCall  func(call int) // run after each call, outside the lock
}

func (tb *table) delete(_ context.Context, cutoff time.Time, limit int) (int, error) {
	tb.mu.Lock()
	tb.calls++
	call := tb.calls
	tb.cutoffs = append(tb.cutoffs, cutoff)
	err := tb.failAt[call]
	n := 0
	if err == nil {
		n = min(limit, tb.old)
		tb.old -= n
	}
	tb.mu.Unlock()
	if tb.onCall != nil {
		tb.onCall(call)
	}
	return n, err
}

func TestSweep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		rows      int
		failAt    int
		wantTotal int
		wantCalls int
		wantErr   bool
	}{
		{name: "nothing to delete", rows: 0, wantTotal: 0, wantCalls: 1},
		{name: "less than a batch", rows: 7, wantTotal: 7, wantCalls: 1},
		{name: "exact batches end with an empty one", rows: 20, wantTotal: 20, wantCalls: 3},
		{name: "several batches", rows: 25, wantTotal: 25, wantCalls: 3},
		{name: "an error stops and reports progress", rows: 25, failAt: 2, wantTotal: 10, wantCalls: 2, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := &table{old: tt.rows, failAt: map[int]error{tt.failAt: errors.New("lock timeout")}}
			got, err := retention.Sweep(context.Background(), tb.delete, time.Now(), 10)
			if got != tt.wantTotal || tb.calls != tt.wantCalls || (err != nil) != tt.wantErr {
				t.Errorf("got %d deleted in %d calls, err %v; want %d in %d, err=%v",
					got, tb.calls, err, tt.wantTotal, tt.wantCalls, tt.wantErr)
			}
		})
	}
}

func TestSweepStopsBetweenBatchesWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	tb := &table{old: 100, onCall: func(int) { cancel() }}
	got, err := retention.Sweep(ctx, tb.delete, time.Now(), 10)
	if got != 10 || tb.calls != 1 || !errors.Is(err, context.Canceled) {
		t.Errorf("got %d deleted in %d calls, err %v; want 10 in 1, context.Canceled", got, tb.calls, err)
	}
}

func TestSweepRefusesAnEmptyBatch(t *testing.T) {
	t.Parallel()
	tb := &table{old: 5}
	if _, err := retention.Sweep(context.Background(), tb.delete, time.Now(), 0); err == nil || tb.calls != 0 {
		t.Errorf("batch 0: got err %v after %d calls, want an error before any (it would never end)", err, tb.calls)
	}
}

// TestRunRetriesAFailedSweepAtTheNextTick: the first sweep fails and is
// logged, the next tick deletes the rows and logs how many, and Run returns
// nil once ctx ends. Every sweep's cutoff is the clock minus the retention.
func TestRunRetriesAFailedSweepAtTheNextTick(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	third := make(chan struct{})
	tb := &table{old: 15, failAt: map[int]error{1: errors.New("database unavailable")}, onCall: func(call int) {
		if call == 4 { // 1 fails; 2 deletes 10 and 3 deletes 5 in the second sweep; 4 is the third sweep
			close(third)
		}
	}}
	var logs logtest.Buffer
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	job := retention.Job{Name: "inbox", Delete: tb.delete, Retention: 24 * time.Hour, Every: time.Millisecond, Batch: 10}
	done := make(chan error, 1)
	go func() {
		done <- retention.Run(ctx, job, func() time.Time { return now }, slog.New(slog.NewJSONHandler(&logs, nil)))
	}()
	select {
	case <-third:
	case <-time.After(10 * time.Second):
		t.Fatalf("no third sweep after 10s; %d calls, logs:\n%s", tb.calls, logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	// The runbook quotes both messages: an operator greps for them.
	runbook, err := os.ReadFile("../../docs/RUNBOOK.md")
	if err != nil {
		t.Fatal(err)
	}
	type logLine struct {
		Level, Msg, Job, Err string
		Deleted              int
	}
	var lines []logLine
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var l logLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if !strings.Contains(string(runbook), "`"+l.Msg+"`") {
			t.Errorf("docs/RUNBOOK.md does not quote the log message %q", l.Msg)
		}
		lines = append(lines, l)
	}
	if len(lines) != 2 {
		t.Fatalf("got %d log lines, want 2 (the failure, then the deletion; a sweep that deletes nothing stays logtest.Discard()):\n%s", len(lines), logs.String())
	}
	if l := lines[0]; l.Level != "WARN" || l.Job != "inbox" || l.Err != "database unavailable" {
		t.Errorf("first line: got %+v, want a WARN of job inbox with the error", l)
	}
	if l := lines[1]; l.Level != "INFO" || l.Job != "inbox" || l.Deleted != 15 {
		t.Errorf("second line: got %+v, want an INFO of job inbox, 15 deleted", l)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for i, c := range tb.cutoffs {
		if want := now.Add(-24 * time.Hour); !c.Equal(want) {
			t.Errorf("call %d: cutoff %v, want %v", i+1, c, want)
		}
	}
}

func TestRunRefusesANonPositiveInterval(t *testing.T) {
	t.Parallel()
	tb := &table{}
	err := retention.Run(context.Background(), retention.Job{Name: "x", Delete: tb.delete, Every: 0, Batch: 1}, time.Now, logtest.Discard())
	if err == nil || tb.calls != 0 {
		t.Errorf("Every 0: got %v after %d calls, want an error before any sweep", err, tb.calls)
	}
}
