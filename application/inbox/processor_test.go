package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// TestProcessorAppliesAndNotesDuplicates: the processor applies recorded
// messages, and a fact recorded twice under two message ids is applied
// once, the second noted.
func TestProcessorAppliesAndNotesDuplicates(t *testing.T) {
	metrics := &countingMetrics{}
	r := newRig(newNotebook(), &inboxtest.FakeSchemas{}, metrics, inbox.ProcessorConfig{})
	ctx := context.Background()
	for _, b := range [][]byte{noted(msgA, "k2", 1), noted(msgB, "k1", 2), noted(msgC, "k1", 2)} {
		if _, err := r.async.Receive(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if n := step(t, r.proc); n != 3 {
		t.Fatalf("claimed %d, want 3", n)
	}
	if n := step(t, r.proc); n != 0 {
		t.Fatalf("second step claimed %d, want 0", n)
	}
	if len(r.pages.written()) != 2 || metrics.applied != 2 || metrics.already != 1 {
		t.Errorf("got %d notes, metrics %+v; want 2 applied, 1 already applied", len(r.pages.written()), metrics)
	}
	notes := 0
	for _, row := range r.store.Inbox() {
		if row.ProcessedAt.IsZero() {
			t.Errorf("row %s not processed", row.ID)
		}
		if strings.Contains(row.Error, "business key") {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("rows noted as already applied: got %d, want 1", notes)
	}
}

// TestProcessorFallsBackToOneRowPerTransaction: when a batch's commit fails,
// the processor re-applies its rows one per transaction, so only the row at
// fault is charged; after MaxAttempts it is parked, and the others were never
// held back.
func TestProcessorFallsBackToOneRowPerTransaction(t *testing.T) {
	metrics := &countingMetrics{}
	r := newRig(newNotebook(), &inboxtest.FakeSchemas{},
		metrics, inbox.ProcessorConfig{MaxAttempts: 2, BackoffBase: time.Nanosecond, BackoffMax: time.Nanosecond})
	ctx := context.Background()
	for _, b := range [][]byte{noted(msgA, "k1", 1), noted(msgB, "k2", 2)} {
		if _, err := r.async.Receive(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	r.pages.refuseCommitsOf("k1", errors.New("deferred check refused"))
	step(t, r.proc)
	if row := r.store.Inbox()[msgB]; row.ProcessedAt.IsZero() {
		t.Fatal("the good row was held back by the bad row's commit failure")
	}
	if attempts, parked, _ := r.store.Attempts(msgA); attempts != 1 || parked {
		t.Fatalf("bad row: %d attempts, parked %v; want 1, not parked", attempts, parked)
	}
	step(t, r.proc)
	if attempts, parked, _ := r.store.Attempts(msgA); attempts != 2 || !parked {
		t.Fatalf("bad row: %d attempts, parked %v; want 2, parked", attempts, parked)
	}
	if n := step(t, r.proc); n != 0 {
		t.Errorf("a parked row was claimed")
	}
	if metrics.retried != 1 || metrics.parked != 1 || metrics.applied != 1 {
		t.Errorf("metrics: got %+v, want 1 retried, 1 parked, 1 applied", metrics)
	}
	if !strings.Contains(r.store.Inbox()[msgA].Error, "deferred check refused") {
		t.Errorf("bad row's error: got %q", r.store.Inbox()[msgA].Error)
	}
	r.pages.refuseCommitsOf("k1", nil)
	if n, err := r.store.Retry(ctx, nil); err != nil || n != 1 {
		t.Fatalf("Retry: %d, %v", n, err)
	}
	step(t, r.proc)
	if row := r.store.Inbox()[msgA]; row.ProcessedAt.IsZero() || len(r.pages.written()) != 2 {
		t.Errorf("after retry: processed_at %v, %d notes; want processed and 2", row.ProcessedAt, len(r.pages.written()))
	}
}

// TestProcessorParksAPermanentRefusalAtOnce: a row whose writes the database
// refuses for good (ErrPermanent) can never apply. Its batch fails at
// commit; the processor applies the batch's rows one per transaction, the
// others commit, and it parks that row at its first attempt, as a row whose
// data can never apply.
func TestProcessorParksAPermanentRefusalAtOnce(t *testing.T) {
	metrics := &countingMetrics{}
	r := newRig(newNotebook(), &inboxtest.FakeSchemas{}, metrics, inbox.ProcessorConfig{MaxAttempts: 10})
	ctx := context.Background()
	for _, b := range [][]byte{noted(msgA, "k1", 1), noted(msgB, "k2", 2)} {
		if _, err := r.async.Receive(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	r.pages.refuseCommitsOf("k2", fmt.Errorf("%w: k2 would overflow its page", inbox.ErrPermanent))
	if n := step(t, r.proc); n != 2 {
		t.Fatalf("claimed %d, want 2", n)
	}
	if n := step(t, r.proc); n != 0 {
		t.Fatalf("claimed %d again, want 0: the refused row is parked, not retried", n)
	}
	attempts, parked, err := r.store.Attempts(msgB)
	if err != nil || !parked || attempts != 1 || !strings.Contains(r.store.Inbox()[msgB].Error, "overflow") {
		t.Errorf("refused row: %d attempts, parked %v (%v), error %q; want parked at its first, with the reason",
			attempts, parked, err, r.store.Inbox()[msgB].Error)
	}
	if metrics.applied != 1 || metrics.parked != 1 || metrics.retried != 0 {
		t.Errorf("metrics %+v; want one applied, one parked, none retried", metrics)
	}
}

// TestProcessorParksInvalidRowsAtOnce: a row the schemas refuse can never
// apply; it is parked at its first attempt, not retried MaxAttempts times.
func TestProcessorParksInvalidRowsAtOnce(t *testing.T) {
	schemas := &inboxtest.FakeSchemas{}
	r := newRig(newNotebook(), schemas, nil, inbox.ProcessorConfig{})
	if _, err := r.async.Receive(context.Background(), noted(msgA, "k1", 1)); err != nil {
		t.Fatal(err)
	}
	schemas.Refuse = errors.New("a schema deployed since refuses it")
	step(t, r.proc)
	if attempts, parked, _ := r.store.Attempts(msgA); !parked || attempts != 1 {
		t.Errorf("row: %d attempts, parked %v; want parked at its first", attempts, parked)
	}
}

// TestTypesLearnedLaterAreAppliedOnce: a message of a type this version does
// not apply is recorded, acknowledged and left pending, in both modes, and
// the processor leaves it alone (no attempt, no error). After a deploy of a
// version whose handler applies the type — new Service and Processor — the
// processor applies each such message once, and a redelivery is a duplicate.
func TestTypesLearnedLaterAreAppliedOnce(t *testing.T) {
	const starred = "note.starred"
	body := func(id, key string) []byte {
		return []byte(strings.Replace(string(noted(id, key, 3)), typeNoted, starred, -1)) // its type and its dataschema
	}
	sync, async := body(msgA, "k1"), body(msgB, "k2")
	old := defaultRig()
	ctx := context.Background()
	if res, err := old.sync.Receive(ctx, sync); err != nil || res.Disposition != inbox.Ignored {
		t.Fatalf("sync, unknown type: got %v, %v; want ignored", res.Disposition, err)
	}
	if res, err := old.async.Receive(ctx, async); err != nil || res.Disposition != inbox.Ignored {
		t.Fatalf("async, unknown type: got %v, %v; want ignored", res.Disposition, err)
	}
	if n := step(t, old.proc); n != 0 {
		t.Fatalf("this version's processor claimed %d rows of a type it does not apply", n)
	}
	for _, id := range []string{msgA, msgB} {
		if attempts, parked, _ := old.store.Attempts(id); attempts != 0 || parked || !old.store.Inbox()[id].ProcessedAt.IsZero() {
			t.Fatalf("row %s: %d attempts, parked %v; want pending and untouched", id, attempts, parked)
		}
	}
	if st, _ := old.store.InboxStats(ctx, old.proc.Types()); st.Unhandled != 2 || st.Pending != 0 {
		t.Errorf("stats: got %+v, want 2 unhandled, 0 pending", st)
	}

	learned := newNotebook() // the deploy
	learned.types[starred] = []string{"1"}
	proc := inbox.NewProcessor(old.store, learned, &inboxtest.FakeSchemas{}, logtest.Discard(), nil, time.Now, inbox.ProcessorConfig{})
	svc := inbox.NewService(old.store, proc, time.Now, inbox.Config{})
	if got := proc.Types(); !slices.Equal(got, []string{typeNoted, starred}) {
		t.Fatalf("the new version applies %v", got)
	}
	if n := step(t, proc); n != 2 {
		t.Fatalf("the new version's processor claimed %d, want 2", n)
	}
	if n := step(t, proc); n != 0 {
		t.Fatalf("claimed %d more, want 0", n)
	}
	if res, err := svc.Receive(ctx, sync); err != nil || res.Disposition != inbox.Duplicate {
		t.Errorf("redelivery: got %v, %v; want duplicate", res.Disposition, err)
	}
	if notes := old.pages.written(); len(notes) != 2 {
		t.Fatalf("got %d notes, want 2, one per message", len(notes))
	}
}

// TestProcessorAppliesABatchInTheHandlersOrder: whatever order the rows were
// claimed in, a batch is applied in the order the handler's Compare gives,
// so that batches committing side by side take the rows they share in the
// same order.
func TestProcessorAppliesABatchInTheHandlersOrder(t *testing.T) {
	r := newRig(newNotebook(), &inboxtest.FakeSchemas{}, nil, inbox.ProcessorConfig{BatchSize: 10})
	keys := []string{"k5", "k1", "k4", "k2", "k3"}
	for i, k := range keys {
		if _, err := r.async.Receive(context.Background(), noted(fmt.Sprintf("0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6b%02d", i), k, i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := step(t, r.proc); n != len(keys) {
		t.Fatalf("claimed %d, want %d in one batch", n, len(keys))
	}
	var got []string
	for _, n := range r.pages.written() {
		got = append(got, n.key)
	}
	if want := []string{"k1", "k2", "k3", "k4", "k5"}; !slices.Equal(got, want) {
		t.Errorf("applied in the order %v, want %v", got, want)
	}
}

// TestAsyncReceiveWakesTheProcessor: a message recorded in the async mode
// wakes an idle processor, which applies it long before its next poll.
func TestAsyncReceiveWakesTheProcessor(t *testing.T) {
	r := newRig(newNotebook(), &inboxtest.FakeSchemas{}, nil, inbox.ProcessorConfig{Workers: 1, PollInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.proc.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	applied := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); len(r.pages.written()) < n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d notes after 10s, want %d: the processor's poll is an hour away, so only a wake-up applies them", len(r.pages.written()), n)
			}
		}
	}
	// The first may be applied by the claim every worker makes at start;
	// once it is, the worker is idle until a wake-up or its poll.
	if _, err := r.async.Receive(ctx, noted(msgA, "k1", 1)); err != nil {
		t.Fatal(err)
	}
	applied(1)
	if _, err := r.async.Receive(ctx, noted(msgB, "k2", 1)); err != nil {
		t.Fatal(err)
	}
	applied(2)
}

// TestOnAppliedFollowsTheCommit: the processor calls OnApplied once per row
// it applied, after the batch committed (the row is processed by then), and
// never for a batch that rolled back or a fact already applied.
func TestOnAppliedFollowsTheCommit(t *testing.T) {
	var r rig
	calls, committed := 0, 0
	r = newRig(newNotebook(), &inboxtest.FakeSchemas{}, nil, inbox.ProcessorConfig{
		BackoffBase: time.Nanosecond, BackoffMax: time.Nanosecond,
		OnApplied: func() {
			calls++
			for _, row := range r.store.Inbox() {
				if !row.ProcessedAt.IsZero() {
					committed++
				}
			}
		},
	})
	ctx := context.Background()
	for _, b := range [][]byte{noted(msgA, "k1", 1), noted(msgB, "k2", 2), noted(msgC, "k1", 3)} {
		if _, err := r.async.Receive(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	r.store.FailCommits(errors.New("connection reset"))
	if _, err := r.proc.Step(ctx); err == nil {
		t.Fatal("Step with failing commits: got nil, want the commit's error")
	}
	if calls != 0 {
		t.Fatalf("OnApplied called %d times for a batch that rolled back, want 0", calls)
	}
	r.store.FailCommits(nil)
	if n := step(t, r.proc); n != 3 {
		t.Fatalf("claimed %d, want 3", n)
	}
	if calls != 2 || committed != 2*3 {
		t.Errorf("OnApplied: %d calls seeing %d processed rows in all; want 2 (k1's second message applies nothing), each after the commit of all 3", calls, committed)
	}
}
