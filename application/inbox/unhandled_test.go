package inbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
	"github.com/payments-outbox/payments-outbox/application/retention"
)

// sized returns a message of type typ, exactly size bytes long.
func sized(t *testing.T, id, typ string, size int) []byte {
	t.Helper()
	head := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":%q,"source":"/tests","data":{"pad":"`, id, typ)
	const tail = `"}}`
	pad := size - len(head) - len(tail)
	if pad < 0 {
		t.Fatalf("a message of %d bytes cannot hold its envelope", size)
	}
	return []byte(head + strings.Repeat("x", pad) + tail)
}

// TestUnhandledMessagesAreCapped: a message of a type this version does not
// apply is recorded up to MaxUnhandledSize and refused as malformed past it
// (so it reaches the DLQ), leaving nothing behind; the types this version
// applies or deliberately ignores are never capped.
func TestUnhandledMessagesAreCapped(t *testing.T) {
	h := newNotebook()
	h.ignored = map[string]string{"note.voided": "voids are kept elsewhere"}
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			r := newRig(h, &inboxtest.FakeSchemas{}, nil, inbox.ProcessorConfig{})
			receive, known := r.sync.Receive, inbox.Applied
			if mode == "async" {
				receive, known = r.async.Receive, inbox.Recorded
			}
			ctx := context.Background()

			res, err := receive(ctx, sized(t, msgA, "note.erased", inbox.MaxUnhandledSize))
			if err != nil || res.Disposition != inbox.Ignored {
				t.Fatalf("unhandled, at the cap: got %v, %v; want ignored", res.Disposition, err)
			}
			if row := r.store.Inbox()[msgA]; len(row.Payload) != inbox.MaxUnhandledSize || !row.ProcessedAt.IsZero() {
				t.Errorf("unhandled, at the cap: a row of %d bytes, processed at %v; want it whole and pending", len(row.Payload), row.ProcessedAt)
			}

			_, err = receive(ctx, sized(t, msgB, "note.erased", inbox.MaxUnhandledSize+1))
			if !errors.Is(err, inbox.ErrMalformed) || !strings.Contains(err.Error(), "note.erased") {
				t.Errorf("unhandled, a byte over the cap: got %v, want ErrMalformed naming the type (the DLQ)", err)
			}
			if _, ok := r.store.Inbox()[msgB]; ok {
				t.Error("unhandled, a byte over the cap: it left an inbox row; its redelivery would be acknowledged as a duplicate")
			}

			over := 2 * inbox.MaxUnhandledSize
			big := bytes.Replace(noted(msgC, "k1", 1), []byte(`"source":`), []byte(`"padding":"`+strings.Repeat("x", over)+`","source":`), 1)
			if res, err := receive(ctx, big); err != nil || res.Disposition != known {
				t.Errorf("a type this version applies, %d bytes: got %v, %v; want %s: its schema decides, not the cap", len(big), res.Disposition, err, known)
			}
			voided := sized(t, "0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6a04", "note.voided", over)
			if res, err := receive(ctx, voided); err != nil || res.Disposition != inbox.Ignored {
				t.Errorf("an ignored type, %d bytes: got %v, %v; want ignored", len(voided), res.Disposition, err)
			}
			if row := r.store.Inbox()["0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6a04"]; row.ProcessedAt.IsZero() {
				t.Error("an ignored type's row is pending; want it recorded processed")
			}
		})
	}
}

type deletedCounter struct{ calls, rows int }

func (c *deletedCounter) UnhandledDeleted(n int) { c.calls++; c.rows += n }

// TestExpireUnhandledLogsAndCountsEachBatch: past their window the
// unhandled rows go, in the retention loop's bounded batches, each batch
// logged once with its count and counted; the rows of a type this version
// applies stay, and before the window ends nothing goes and nothing is
// logged.
func TestExpireUnhandledLogsAndCountsEachBatch(t *testing.T) {
	var logs bytes.Buffer
	p := &pages{}
	m := inboxtest.NewFakeStore(p)
	proc := inbox.NewProcessor(m, newNotebook(), &inboxtest.FakeSchemas{}, slog.New(slog.NewJSONHandler(&logs, nil)), nil, time.Now, inbox.ProcessorConfig{})
	svc := inbox.NewService(m, proc, func() time.Time { return now }, inbox.Config{Mode: inbox.Async}) // every row received at now
	ctx := context.Background()
	for i := range 5 {
		if _, err := svc.Receive(ctx, sized(t, fmt.Sprintf("0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6b%02d", i), "note.erased", 300)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Receive(ctx, noted(msgA, "k1", 1)); err != nil {
		t.Fatal(err)
	}
	counter := &deletedCounter{}
	del := proc.ExpireUnhandled(m, counter)

	if n, err := retention.Sweep(ctx, del, now, 2); err != nil || n != 0 || logs.Len() != 0 || counter.calls != 0 {
		t.Fatalf("inside the window: %d deleted, %v, %d counts, logs %q; want nothing", n, err, counter.calls, logs.String())
	}
	n, err := retention.Sweep(ctx, del, now.Add(time.Second), 2)
	if err != nil || n != 5 {
		t.Fatalf("past the window: got %d, %v; want the 5 unhandled rows", n, err)
	}
	if counter.calls != 3 || counter.rows != 5 {
		t.Errorf("counted %d rows in %d calls, want 5 in 3 (one per batch of 2)", counter.rows, counter.calls)
	}
	runbook, err := os.ReadFile("../../docs/RUNBOOK.md")
	if err != nil {
		t.Fatal(err)
	}
	var deleted []int
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var l struct {
			Level, Msg string
			Deleted    int
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if l.Level != "WARN" || !strings.Contains(string(runbook), "`"+l.Msg+"`") {
			t.Errorf("log line %q: want a WARN whose message docs/RUNBOOK.md quotes", line)
		}
		deleted = append(deleted, l.Deleted)
	}
	if fmt.Sprint(deleted) != "[2 2 1]" {
		t.Errorf("logged deletions: got %v, want [2 2 1], one line per batch", deleted)
	}
	st, err := m.InboxStats(ctx, proc.Types())
	if err != nil {
		t.Fatal(err)
	}
	if st.Unhandled != 0 || st.Pending != 1 {
		t.Errorf("stats: got %+v, want none unhandled and the payment still pending", st)
	}
}
