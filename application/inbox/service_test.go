package inbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/application/inbox"
)

func TestReceiveAppliesAMessageOnce(t *testing.T) {
	r := defaultRig()
	ctx := context.Background()
	var got []string
	for range 3 {
		res, err := r.sync.Receive(ctx, noted(msgA, "k1", 7))
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		got = append(got, res.Disposition.String())
	}
	if want := "applied,duplicate,duplicate"; strings.Join(got, ",") != want {
		t.Errorf("dispositions: got %v, want %s", got, want)
	}
	if notes := r.pages.written(); len(notes) != 1 || notes[0].msgID != msgA || notes[0].n != 7 {
		t.Errorf("notes: got %+v, want one, of %s", notes, msgA)
	}
	if row := r.store.Inbox()[msgA]; !row.ProcessedAt.Equal(now) || row.Type != typeNoted {
		t.Errorf("inbox row: got %+v, want %s processed now", row, typeNoted)
	}
}

// A message reusing a recorded id with another body is dropped as a
// duplicate, marked Conflicting for the warning and the metric, in both
// modes; a redelivery of the same document is a plain duplicate.
func TestReceiveMarksTheSameIDWithAnotherBody(t *testing.T) {
	r := defaultRig()
	ctx := context.Background()
	for name, svc := range map[string]*inbox.Service[Notes, note]{"sync": r.sync, "async": r.async} {
		id := msgA
		if name == "async" {
			id = msgB
		}
		if _, err := svc.Receive(ctx, noted(id, "k-"+name, 7)); err != nil {
			t.Fatal(err)
		}
		res, err := svc.Receive(ctx, noted(id, "k-"+name, 7))
		if err != nil || res.Disposition != inbox.Duplicate || res.Conflicting {
			t.Errorf("%s, a redelivery: %+v, %v; want a plain duplicate", name, res, err)
		}
		res, err = svc.Receive(ctx, noted(id, "k-"+name, 9999))
		if err != nil || res.Disposition != inbox.Duplicate || !res.Conflicting {
			t.Errorf("%s, another body under the id: %+v, %v; want a conflicting duplicate", name, res, err)
		}
	}
	if n := len(r.pages.written()); n != 1 {
		t.Errorf("%d notes written, want the first message's alone", n)
	}
}

// The consumer's own business key is the second layer: the same fact under
// another message id applies nothing, and its row says why.
func TestReceiveNotesAFactAlreadyApplied(t *testing.T) {
	r := defaultRig()
	ctx := context.Background()
	if _, err := r.sync.Receive(ctx, noted(msgA, "k1", 7)); err != nil {
		t.Fatal(err)
	}
	res, err := r.sync.Receive(ctx, noted(msgB, "k1", 7))
	if err != nil || res.Disposition != inbox.Duplicate {
		t.Fatalf("got %v, %v; want duplicate", res.Disposition, err)
	}
	if len(r.pages.written()) != 1 {
		t.Errorf("notes: got %d, want 1", len(r.pages.written()))
	}
	if note := r.store.Inbox()[msgB].Error; !strings.Contains(note, "business key") {
		t.Errorf("inbox note: got %q, want it to name the business key", note)
	}
}

// The async mode records what the sync mode would apply, pending, applies
// nothing, and leaves the rest to the processor; a redelivery is a
// duplicate in either mode.
func TestReceiveInTheAsyncModeRecordsForTheProcessor(t *testing.T) {
	r := defaultRig()
	ctx := context.Background()
	var got []string
	for range 2 {
		res, err := r.async.Receive(ctx, noted(msgA, "k1", 7))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.Disposition.String())
	}
	if strings.Join(got, ",") != "recorded,duplicate" {
		t.Errorf("dispositions: got %v, want recorded,duplicate", got)
	}
	if row := r.store.Inbox()[msgA]; !row.ProcessedAt.IsZero() || len(r.pages.written()) != 0 {
		t.Fatalf("recorded: processed_at %v and %d notes, want pending and none", row.ProcessedAt, len(r.pages.written()))
	}
	if res, err := r.sync.Receive(ctx, noted(msgA, "k1", 7)); err != nil || res.Disposition != inbox.Duplicate {
		t.Errorf("redelivery to the sync mode: got %v, %v; want duplicate", res.Disposition, err)
	}
	if n := step(t, r.proc); n != 1 || len(r.pages.written()) != 1 {
		t.Errorf("the processor claimed %d and wrote %d notes, want 1 and 1", n, len(r.pages.written()))
	}
}

func TestReceiveRecordsUnknownTypes(t *testing.T) {
	r := defaultRig()
	body := []byte(`{"specversion":"1.0","id":"` + msgA + `","type":"note.erased","source":"/tests","data":{"x":1}}`)
	for _, want := range []inbox.Disposition{inbox.Ignored, inbox.Duplicate} {
		res, err := r.sync.Receive(context.Background(), body)
		if err != nil || res.Disposition != want {
			t.Errorf("got %v, %v; want %s", res.Disposition, err, want)
		}
	}
	msg, ok := r.store.Inbox()[msgA]
	if !ok || !msg.ProcessedAt.IsZero() || msg.Error == "" {
		t.Errorf("inbox row: got %+v (present %v), want unprocessed with a reason", msg, ok)
	}
	if len(r.pages.written()) != 0 {
		t.Errorf("notes: got %d, want 0", len(r.pages.written()))
	}
}

// A type the consumer deliberately never applies is recorded done, in both
// modes: not left pending for a version that will never apply it.
func TestIgnoredTypesAreRecordedProcessed(t *testing.T) {
	h := newNotebook()
	h.ignored = map[string]string{"note.erased": "erasures are kept elsewhere"}
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			r := newRig(h, nil, nil, inbox.ProcessorConfig{})
			receive := r.sync.Receive
			if mode == "async" {
				receive = r.async.Receive
			}
			body := []byte(`{"specversion":"1.0","id":"` + msgA + `","type":"note.erased","source":"/tests","data":{"x":1}}`)
			for _, want := range []inbox.Disposition{inbox.Ignored, inbox.Duplicate} {
				res, err := receive(context.Background(), body)
				if err != nil || res.Disposition != want {
					t.Errorf("got %v, %v; want %s", res.Disposition, err, want)
				}
			}
			msg := r.store.Inbox()[msgA]
			if !msg.ProcessedAt.Equal(now) || !strings.Contains(msg.Error, "erasures are kept elsewhere") {
				t.Errorf("inbox row: processed at %v, note %q; want processed now, with the reason", msg.ProcessedAt, msg.Error)
			}
			st, err := r.store.InboxStats(context.Background(), r.proc.Types())
			if err != nil || st.Pending != 0 || st.Unhandled != 0 {
				t.Errorf("inbox stats: %+v, %v; want nothing pending or unhandled", st, err)
			}
		})
	}
}

func TestReceiveRefusesWhatCanNeverApply(t *testing.T) {
	good := string(noted(msgA, "k1", 7))
	tests := []struct {
		name string
		body string
		want error
	}{
		{"not json", `{"specversion":`, inbox.ErrMalformed},
		{"json array", `[1,2]`, inbox.ErrMalformed},
		{"sns envelope (raw delivery off)", `{"Type":"Notification","MessageId":"x","TopicArn":"arn","Message":"{}"}`, inbox.ErrMalformed},
		{"invalid utf-8", strings.Replace(good, `"k1"`, "\"k\xff\"", 1), inbox.ErrMalformed},
		{"nul character", strings.Replace(good, `"key":"k1"`, `"key":"k\u0000"`, 1), inbox.ErrMalformed},
		{"escaped backslash before u0000 is no NUL", strings.Replace(good, `"n":7`, `"n":"\\u0000"`, 1), inbox.ErrInvalidEvent},
		{"wrong specversion", strings.Replace(good, `"1.0"`, `"0.3"`, 1), inbox.ErrMalformed},
		{"id not a uuid", strings.Replace(good, msgA, "42", 1), inbox.ErrMalformed},
		{"no type", strings.Replace(good, `"type":"note.added",`, "", 1), inbox.ErrMalformed},
		{"unknown data version", strings.Replace(good, `/v1.json"`, `/v2.json"`, 1), inbox.ErrInvalidEvent},
		{"no version", strings.Replace(good, `"dataschema":"https://payments-outbox.example/schemas/events/note.added/v1.json",`, ``, 1), inbox.ErrInvalidEvent},
		{"bad time", strings.Replace(good, `2026-11-29T12:00:00.123Z`, `yesterday`, 1), inbox.ErrInvalidEvent},
		{"no time", strings.Replace(good, `"time":"2026-11-29T12:00:00.123Z",`, ``, 1), inbox.ErrInvalidEvent},
		{"no data", strings.Replace(good, `"data":{`, `"nodata":{`, 1), inbox.ErrInvalidEvent},
		{"data the handler refuses", strings.Replace(good, `"n":7`, `"n":-1`, 1), inbox.ErrInvalidEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []string{"sync", "async"} {
				r := defaultRig()
				receive := r.sync.Receive
				if mode == "async" {
					receive = r.async.Receive
				}
				if _, err := receive(context.Background(), []byte(tt.body)); !errors.Is(err, tt.want) {
					t.Errorf("%s: got %v, want %v", mode, err, tt.want)
				}
				if len(r.store.Inbox()) != 0 {
					t.Errorf("%s: %d inbox rows, want 0 (a refused message must reach the DLQ, not look like a duplicate)", mode, len(r.store.Inbox()))
				}
			}
		})
	}
}

func TestReceiveFailedCommitLeavesNothing(t *testing.T) {
	r := defaultRig()
	r.store.FailCommits(errors.New("connection reset"))
	_, err := r.sync.Receive(context.Background(), noted(msgA, "k1", 7))
	if err == nil || errors.Is(err, inbox.ErrMalformed) || errors.Is(err, inbox.ErrInvalidEvent) || errors.Is(err, inbox.ErrPermanent) {
		t.Fatalf("got %v, want a transient error", err)
	}
	if len(r.store.Inbox()) != 0 || len(r.pages.written()) != 0 {
		t.Fatalf("%d inbox rows and %d notes after a failed commit, want none", len(r.store.Inbox()), len(r.pages.written()))
	}
	r.store.FailCommits(nil)
	if res, err := r.sync.Receive(context.Background(), noted(msgA, "k1", 7)); err != nil || res.Disposition != inbox.Applied {
		t.Errorf("redelivery: got %v, %v; want applied", res.Disposition, err)
	}
}

// TestReceiveParksWhatTheDatabaseRefusesForGood: in the sync mode, a message
// whose writes the database refuses for good (ErrPermanent) is not left for
// redelivery — it would be refused forever, and the queue would move it to
// the DLQ as if it were malformed — but recorded in the inbox parked, with
// the reason, and acknowledged.
func TestReceiveParksWhatTheDatabaseRefusesForGood(t *testing.T) {
	r := defaultRig()
	ctx := context.Background()
	r.pages.refuseCommitsOf("k2", fmt.Errorf("%w: k2 would overflow its page", inbox.ErrPermanent))
	if res, err := r.sync.Receive(ctx, noted(msgA, "k1", 7)); err != nil || res.Disposition != inbox.Applied {
		t.Fatalf("first: got %v, %v; want applied", res.Disposition, err)
	}
	res, err := r.sync.Receive(ctx, noted(msgB, "k2", 7))
	if err != nil || res.Disposition != inbox.Parked || res.MessageID != msgB {
		t.Fatalf("refused: got %+v, %v; want parked, no error (acknowledge it)", res, err)
	}
	row := r.store.Inbox()[msgB]
	if attempts, parked, err := r.store.Attempts(msgB); err != nil || !parked || attempts != 1 || !row.ProcessedAt.IsZero() ||
		!strings.Contains(row.Error, "k2 would overflow its page") {
		t.Errorf("inbox row: parked=%v attempts=%d processed=%v error %q (%v); want parked once, unprocessed, with the reason",
			parked, attempts, row.ProcessedAt, row.Error, err)
	}
	if notes := r.pages.written(); len(notes) != 1 {
		t.Errorf("notes: got %d, want the first alone", len(notes))
	}
	if st, _ := r.store.InboxStats(ctx, r.proc.Types()); st.Parked != 1 {
		t.Errorf("stats: got %+v, want 1 parked (inbox_parked_rows pages on it)", st)
	}
	if res, err := r.sync.Receive(ctx, noted(msgB, "k2", 7)); err != nil || res.Disposition != inbox.Duplicate {
		t.Errorf("redelivery of the parked message: got %v, %v; want duplicate", res.Disposition, err)
	}
}

// A transient refusal is not parked: it is left for redelivery.
func TestReceiveLeavesATransientRefusalForRedelivery(t *testing.T) {
	r := defaultRig()
	r.pages.refuseCommitsOf("k1", errors.New("serialization failure"))
	if _, err := r.sync.Receive(context.Background(), noted(msgA, "k1", 7)); err == nil || errors.Is(err, inbox.ErrPermanent) {
		t.Fatalf("got %v, want a transient error", err)
	}
	if len(r.store.Inbox()) != 0 {
		t.Error("the message is in the inbox: its redelivery would be acknowledged as a duplicate")
	}
}

// TestReceiveLeavesAMessageItCouldNotParkForRedelivery: if the transaction
// that parks the message fails too, nothing is acknowledged.
func TestReceiveLeavesAMessageItCouldNotParkForRedelivery(t *testing.T) {
	r := defaultRig()
	r.pages.refuseCommitsOf("k1", fmt.Errorf("%w: no room", inbox.ErrPermanent))
	r.store.FailCommits(errors.New("connection reset"))
	res, err := r.sync.Receive(context.Background(), noted(msgA, "k1", 7))
	if err == nil || !errors.Is(err, inbox.ErrPermanent) || errors.Is(err, inbox.ErrInvalidEvent) {
		t.Fatalf("got %v, %v; want an error naming the refusal and the failed park", res.Disposition, err)
	}
	if _, ok := r.store.Inbox()[msgA]; ok {
		t.Error("the message is in the inbox: its redelivery would be acknowledged as a duplicate")
	}
}

// Every way a message is recorded — applied, recorded for the processor,
// parked, of a type not applied — keeps the trace id of the trace context
// the event carries, as data the store writes: no store reads a trace from
// its context.
func TestReceiveKeepsTheEventsTraceID(t *testing.T) {
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		msgD    = "0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6a04"
		msgE    = "0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6a05"
	)
	traced := func(body []byte) []byte {
		return bytes.Replace(body, []byte(`{`), []byte(`{"traceparent":"00-`+traceID+`-00f067aa0ba902b7-01",`), 1)
	}
	r := defaultRig()
	ctx := context.Background()
	r.pages.refuseCommitsOf("k3", fmt.Errorf("%w: refused", inbox.ErrPermanent))
	msgs := map[string]struct {
		recv func(context.Context, []byte) (inbox.Result, error)
		body []byte
		want inbox.Disposition
	}{
		msgA: {r.sync.Receive, noted(msgA, "k1", 1), inbox.Applied},
		msgB: {r.async.Receive, noted(msgB, "k2", 1), inbox.Recorded},
		msgC: {r.sync.Receive, noted(msgC, "k3", 1), inbox.Parked},
		msgD: {r.sync.Receive, []byte(`{"specversion":"1.0","id":"` + msgD + `","type":"note.erased","source":"/tests"}`), inbox.Ignored},
	}
	for id, m := range msgs {
		if res, err := m.recv(ctx, traced(m.body)); err != nil || res.Disposition != m.want {
			t.Fatalf("%s: got %v, %v; want %v", id, res.Disposition, err, m.want)
		}
		if got := r.store.Inbox()[id].TraceID; got != traceID {
			t.Errorf("%s (%v): trace id %q, want the event's %s", id, m.want, got, traceID)
		}
	}
	if _, err := r.sync.Receive(ctx, noted(msgE, "k4", 1)); err != nil {
		t.Fatal(err)
	}
	if got := r.store.Inbox()[msgE].TraceID; got != "" {
		t.Errorf("an event without a trace context: trace id %q, want none", got)
	}
}
