// Package inboxtest holds the inbox's test doubles and the contract every
// store of the inbox must honour: FakeStore, an in-memory inbox beside a
// consumer's own tables for the unit tests, FakeSchemas, and RunContract,
// one suite that the fakes and the Postgres stores (adapters/postgres/
// inboxstore, and ledgerstore, which builds on it) all pass, so the fakes the
// unit tests rely on cannot drift from the real thing. A consumer's own
// contract (ledgerstest's for the ledger) covers its tables, and that
// they are written in the inbox's transactions and savepoints.
package inboxtest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
)

// Store is what the contract exercises: the inbox's ports together, R being
// whatever repositories the consumer binds to its transactions.
type Store[R any] interface {
	inbox.Recorder[R]
	inbox.Backlog[R]
	inbox.Admin
}

// Fixed ids, so that a failure message is easy to read. Each subtest gets a
// fresh store, so they never collide.
const (
	msg1 = "0190e7a0-0000-7000-8000-000000000001"
	msg2 = "0190e7a0-0000-7000-8000-000000000002"
	msg3 = "0190e7a0-0000-7000-8000-000000000003"
	msg4 = "0190e7a0-0000-7000-8000-000000000004"
)

// The types the contract's rows have: one the consumer applies and one it
// does not know. The store never reads a payload; it keeps what it is given.
const (
	applied = "payment.created"
	unknown = "payment.not_yet_known"
)

var at = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func inboxMsg(id string) inbox.Message {
	return inbox.Message{ID: id, Type: applied, Payload: []byte(`{"k":1}`), ReceivedAt: at, ProcessedAt: at}
}

// RunContract runs the contract against stores made by open, one per subtest.
func RunContract[R any](t *testing.T, open func(t *testing.T) Store[R]) {
	ctx := context.Background()

	t.Run("record is idempotent: a redelivery runs nothing", func(t *testing.T) {
		s := open(t)
		var inserted []bool
		runs := 0
		for range 2 {
			ok, err := s.Record(ctx, inboxMsg(msg1), func(context.Context, R) (string, error) {
				runs++
				return "", nil
			})
			if err != nil {
				t.Fatal(err)
			}
			inserted = append(inserted, ok)
		}
		if !inserted[0] || inserted[1] || runs != 1 {
			t.Errorf("inserted: got %v with apply run %d times, want [true false] and once", inserted, runs)
		}
		if ok, err := s.Record(ctx, inboxMsg(msg2), nil); err != nil || !ok {
			t.Errorf("record without apply: got %v, %v; want inserted", ok, err)
		}
	})

	t.Run("the same id with another body is refused as a conflicting duplicate", func(t *testing.T) {
		s := open(t)
		if _, err := s.Record(ctx, inboxMsg(msg1), nil); err != nil {
			t.Fatal(err)
		}
		same := inboxMsg(msg1)
		same.Payload = []byte(`{ "k" : 1 }`) // the same document, spaced otherwise
		if ok, err := s.Record(ctx, same, nil); ok || err != nil {
			t.Errorf("a redelivery: got %v, %v; want a plain duplicate", ok, err)
		}
		other := inboxMsg(msg1)
		other.Payload = []byte(`{"k":2}`)
		runs := 0
		ok, err := s.Record(ctx, other, func(context.Context, R) (string, error) { runs++; return "", nil })
		if ok || !errors.Is(err, inbox.ErrConflictingDuplicate) || runs != 0 {
			t.Errorf("another body under the id: got %v, %v, apply run %d times; want not inserted, ErrConflictingDuplicate, never run", ok, err, runs)
		}
	})

	t.Run("a failed apply leaves no inbox row", func(t *testing.T) {
		s := open(t)
		boom := errors.New("boom")
		_, err := s.Record(ctx, inboxMsg(msg1), func(context.Context, R) (string, error) { return "a note", boom })
		if !errors.Is(err, boom) {
			t.Fatalf("Record: got %v, want %v", err, boom)
		}
		if ok, err := s.Record(ctx, inboxMsg(msg1), nil); err != nil || !ok {
			t.Errorf("after the rollback: got inserted %v, %v; want the row recorded anew", ok, err)
		}
	})

	runBacklogContract(t, open)

	t.Run("a message recorded parked waits for the operator", func(t *testing.T) {
		s := open(t)
		m := pendingMsg(msg1, applied, at)
		m.ParkedAt, m.Error = at, "balance limit"
		insert(t, s, m)
		c := inbox.Claim{Limit: 10, Types: []string{applied}}
		if got := claimIDs(t, s, c, nil); len(got) != 0 {
			t.Fatalf("a parked row was claimed: %v", got)
		}
		if st, err := s.InboxStats(ctx, c.Types); err != nil || st.Parked != 1 || st.Pending != 0 {
			t.Errorf("stats: got %+v, %v; want 1 parked", st, err)
		}
		if n, err := s.Retry(ctx, []string{msg1}); err != nil || n != 1 {
			t.Fatalf("retry: got %d, %v; want 1", n, err)
		}
		var attempts int
		got := claimIDs(t, s, c, func(rows []inbox.PendingMessage, _ inbox.ApplyFunc[R]) inbox.BatchResult {
			attempts = rows[0].Attempts
			return inbox.BatchResult{}
		})
		if len(got) != 1 || attempts != 0 {
			t.Errorf("after retry: got %v with %d attempts, want [%s] with 0", got, attempts, msg1)
		}
	})

	t.Run("a failed batch writes nothing back", func(t *testing.T) {
		s := open(t)
		insert(t, s, pendingMsg(msg1, applied, at), pendingMsg(msg2, applied, at.Add(time.Second)))
		boom := errors.New("boom")
		c := inbox.Claim{Limit: 10, Types: []string{applied}}
		_, err := s.ClaimPending(ctx, c, func(ctx context.Context, rows []inbox.PendingMessage, apply inbox.ApplyFunc[R]) (inbox.BatchResult, error) {
			if err := apply(ctx, inbox.Event{ID: msg1}, func(context.Context, R) error { return nil }); err != nil {
				return inbox.BatchResult{}, err
			}
			return inbox.BatchResult{At: time.Now(), Processed: []inbox.Processed{{ID: msg1}},
				Parked: []inbox.Failure{{ID: msg2, Error: "boom", Attempts: 1}}}, boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want %v", err, boom)
		}
		if st, err := s.InboxStats(ctx, c.Types); err != nil || st.Pending != 2 || st.Parked != 0 {
			t.Errorf("stats: got %+v, %v; want both rows pending, as before the batch", st, err)
		}
		var attempts []int
		got := claimIDs(t, s, c, func(rows []inbox.PendingMessage, _ inbox.ApplyFunc[R]) inbox.BatchResult {
			for _, r := range rows {
				attempts = append(attempts, r.Attempts)
			}
			return inbox.BatchResult{}
		})
		if len(got) != 2 || !slices.Equal(attempts, []int{0, 0}) {
			t.Errorf("after the failed batch: got %v with attempts %v, want both rows with none", got, attempts)
		}
	})
}

func pendingMsg(id, typ string, received time.Time) inbox.Message {
	return inbox.Message{ID: id, Type: typ, Payload: []byte(`{"k":1}`), ReceivedAt: received}
}

// claimIDs claims with c and returns the ids claimed, writing out whatever
// fn makes of them (nothing when fn is nil).
func claimIDs[R any](t *testing.T, s Store[R], c inbox.Claim, fn func([]inbox.PendingMessage, inbox.ApplyFunc[R]) inbox.BatchResult) []string {
	t.Helper()
	var ids []string
	_, err := s.ClaimPending(context.Background(), c, func(_ context.Context, rows []inbox.PendingMessage, apply inbox.ApplyFunc[R]) (inbox.BatchResult, error) {
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		if fn == nil {
			return inbox.BatchResult{}, nil
		}
		return fn(rows, apply), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func insert[R any](t *testing.T, s Store[R], msgs ...inbox.Message) {
	t.Helper()
	for _, m := range msgs {
		if _, err := s.Record(context.Background(), m, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// runBacklogContract is the processor's side of the contract: claims,
// what a batch writes back, stats, retries and the expiry of unhandled
// rows.
func runBacklogContract[R any](t *testing.T, open func(t *testing.T) Store[R]) {
	ctx := context.Background()
	created := []string{applied}

	t.Run("claim takes the oldest due pending rows of the given types", func(t *testing.T) {
		s := open(t)
		insert(t, s,
			pendingMsg(msg2, applied, at.Add(time.Second)),
			pendingMsg(msg1, applied, at),
			inboxMsg(msg3), // processed
			pendingMsg(msg4, unknown, at.Add(-time.Hour)))
		if got := claimIDs(t, s, inbox.Claim{Limit: 1, Types: created}, nil); len(got) != 1 || got[0] != msg1 {
			t.Errorf("limit 1: got %v, want [%s] (the oldest)", got, msg1)
		}
		if got := claimIDs(t, s, inbox.Claim{Limit: 10, Types: created}, nil); len(got) != 2 || got[0] != msg1 || got[1] != msg2 {
			t.Errorf("got %v, want [%s %s]: not the processed row, not the type not asked for", got, msg1, msg2)
		}
		if got := claimIDs(t, s, inbox.Claim{Limit: 10, Types: created, IDs: []string{msg2, msg3}}, nil); len(got) != 1 || got[0] != msg2 {
			t.Errorf("by id: got %v, want [%s]", got, msg2)
		}
		if got := claimIDs(t, s, inbox.Claim{Limit: 10, Types: []string{unknown}}, nil); len(got) != 1 || got[0] != msg4 {
			t.Errorf("a type learned later: got %v, want [%s]", got, msg4)
		}
		st, err := s.InboxStats(ctx, created)
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending != 2 || st.Unhandled != 1 || st.Parked != 0 || st.OldestPending <= 0 {
			t.Errorf("stats: got %+v, want 2 pending, 1 unhandled, none parked, an oldest age", st)
		}
	})

	t.Run("results: retry later, park, retry by the operator, processed", func(t *testing.T) {
		s := open(t)
		insert(t, s, pendingMsg(msg1, applied, at))
		c := inbox.Claim{Limit: 10, Types: created}
		claimIDs(t, s, c, func(rows []inbox.PendingMessage, _ inbox.ApplyFunc[R]) inbox.BatchResult {
			return inbox.BatchResult{At: time.Now(), Retry: []inbox.Failure{{ID: msg1, Error: "boom", Attempts: 1, NextAttemptAt: time.Now().Add(time.Hour)}}}
		})
		if got := claimIDs(t, s, c, nil); len(got) != 0 {
			t.Fatalf("a row due in an hour was claimed: %v", got)
		}
		if st, _ := s.InboxStats(ctx, created); st.Pending != 1 {
			t.Errorf("a row waiting for its retry is pending: got %+v", st)
		}
		if _, err := s.Retry(ctx, []string{msg1}); !errors.Is(err, inbox.ErrUnknownMessage) {
			t.Errorf("retry of a row that is not parked: got %v, want ErrUnknownMessage", err)
		}

		insert(t, s, pendingMsg(msg2, applied, at))
		var attempts int
		claimIDs(t, s, c, func(rows []inbox.PendingMessage, _ inbox.ApplyFunc[R]) inbox.BatchResult {
			attempts = rows[0].Attempts
			return inbox.BatchResult{At: time.Now(), Retry: []inbox.Failure{{ID: msg2, Error: "boom", Attempts: 1, NextAttemptAt: time.Now().Add(-time.Second)}}}
		})
		got := claimIDs(t, s, c, func(rows []inbox.PendingMessage, _ inbox.ApplyFunc[R]) inbox.BatchResult {
			attempts = rows[0].Attempts
			return inbox.BatchResult{At: time.Now(), Parked: []inbox.Failure{{ID: msg2, Error: "boom again", Attempts: 2}}}
		})
		if len(got) != 1 || got[0] != msg2 || attempts != 1 {
			t.Fatalf("a row due again: got %v with %d attempts, want [%s] with 1", got, attempts, msg2)
		}
		if got := claimIDs(t, s, c, nil); len(got) != 0 {
			t.Fatalf("a parked row was claimed: %v", got)
		}
		if st, _ := s.InboxStats(ctx, created); st.Parked != 1 || st.Pending != 1 {
			t.Errorf("stats: got %+v, want 1 parked, 1 pending", st)
		}
		if n, err := s.Retry(ctx, nil); err != nil || n != 1 {
			t.Fatalf("retry all parked: got %d, %v; want 1", n, err)
		}
		got = claimIDs(t, s, c, func(rows []inbox.PendingMessage, _ inbox.ApplyFunc[R]) inbox.BatchResult {
			attempts = rows[0].Attempts
			return inbox.BatchResult{At: time.Now(), Processed: []inbox.Processed{{ID: msg2}}}
		})
		if len(got) != 1 || attempts != 0 {
			t.Fatalf("after retry: got %v with %d attempts, want [%s] with 0", got, attempts, msg2)
		}
		if st, _ := s.InboxStats(ctx, created); st.Parked != 0 || st.Pending != 1 {
			t.Errorf("stats after processing: got %+v, want none parked, 1 pending (the row due in an hour)", st)
		}
	})

	t.Run("unhandled rows past the cutoff are deleted, in batches; nothing else is", func(t *testing.T) {
		s := open(t)
		const (
			unapplied = unknown // a type this version does not apply
			old1      = "0190e7a0-0000-7000-8000-0000000000c1"
			old2      = "0190e7a0-0000-7000-8000-0000000000c2"
			old3      = "0190e7a0-0000-7000-8000-0000000000c3"
			recent    = "0190e7a0-0000-7000-8000-0000000000c4"
			parked    = "0190e7a0-0000-7000-8000-0000000000c5"
			done      = "0190e7a0-0000-7000-8000-0000000000c6"
		)
		cutoff := at.Add(-time.Hour)
		past := cutoff.Add(-24 * time.Hour)
		processed := pendingMsg(done, unapplied, past) // an ignored type's row: done on arrival
		processed.ProcessedAt = past
		insert(t, s,
			pendingMsg(old1, unapplied, past), pendingMsg(old2, unapplied, past.Add(time.Second)), pendingMsg(old3, unapplied, past.Add(2*time.Second)),
			pendingMsg(recent, unapplied, cutoff.Add(time.Second)),
			pendingMsg(parked, unapplied, past), processed,
			pendingMsg(msg1, applied, past), pendingMsg(msg2, applied, past))
		// A version that applies the type parked two rows; an older one must
		// keep them.
		claimIDs(t, s, inbox.Claim{Limit: 10, Types: []string{unapplied, applied}, IDs: []string{parked, msg2}},
			func(rows []inbox.PendingMessage, _ inbox.ApplyFunc[R]) inbox.BatchResult {
				return inbox.BatchResult{At: time.Now(), Parked: []inbox.Failure{{ID: parked, Error: "boom", Attempts: 1}, {ID: msg2, Error: "boom", Attempts: 1}}}
			})

		var got []int
		for range 3 {
			n, err := s.DeleteUnhandled(ctx, created, cutoff, 2)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, n)
		}
		if want := []int{2, 1, 0}; !slices.Equal(got, want) {
			t.Errorf("deleted per batch of 2: got %v, want %v (the three unhandled rows older than the cutoff)", got, want)
		}
		st, err := s.InboxStats(ctx, created)
		if err != nil {
			t.Fatal(err)
		}
		if st.Unhandled != 1 || st.Pending != 1 || st.Parked != 2 {
			t.Errorf("stats: got %+v, want 1 unhandled (the recent one), 1 pending and 2 parked, kept", st)
		}
		// An id the inbox still holds inserts nothing; a deleted one inserts again.
		var kept []string
		probe := errors.New("roll back the probe")
		for _, id := range []string{old1, old2, old3, recent, parked, done, msg1, msg2} {
			ran := false
			_, err := s.Record(ctx, pendingMsg(id, unapplied, at), func(context.Context, R) (string, error) {
				ran = true
				return "", probe
			})
			if ran != errors.Is(err, probe) || (!ran && err != nil) {
				t.Fatalf("probe %s: apply ran %v, got %v", id, ran, err)
			}
			if !ran {
				kept = append(kept, id)
			}
		}
		if want := []string{recent, parked, done, msg1, msg2}; !slices.Equal(kept, want) {
			t.Errorf("rows kept: got %v, want %v", kept, want)
		}
	})
}
