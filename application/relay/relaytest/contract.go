// Package relaytest holds the relay's test doubles and the contract every
// relay.Store must honour: FakeStore, an in-memory outbox for the relay's unit
// tests, and RunContract, one suite that runs against the fake and the Postgres
// store alike. Because the fake passes it, tests written with the fake say
// something true about production.
package relaytest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/relay"
)

// Harness gives the contract a fresh, empty store plus what the port itself does
// not offer: committing PENDING rows (the write side's job) and reading a row's
// state back.
type Harness struct {
	Store relay.Store
	// Insert commits n due PENDING rows, oldest first, and returns their ids.
	Insert func(t *testing.T, n int) []uuid.UUID
	// State returns a row's status (PENDING, PUBLISHED or DEAD) and attempts.
	State func(t *testing.T, id uuid.UUID) (status string, attempts int)
}

// RunContract runs the contract; newHarness must return an empty store each call.
func RunContract(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Run("claims due rows oldest first up to the limit", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		ids := h.Insert(t, 5)
		var got []uuid.UUID
		n, err := h.Store.ClaimBatch(context.Background(), 3, func(msgs []relay.Message) (relay.Outcome, error) {
			for _, m := range msgs {
				got = append(got, m.ID)
			}
			return relay.Outcome{}, nil
		})
		if err != nil || n != 3 {
			t.Fatalf("got %d, %v; want 3, nil", n, err)
		}
		for i, id := range got {
			if id != ids[i] {
				t.Errorf("message %d: got %s, want %s (oldest first)", i, id, ids[i])
			}
		}
	})

	t.Run("writes the outcome", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		ids := h.Insert(t, 3)
		_, err := h.Store.ClaimBatch(context.Background(), 10, func([]relay.Message) (relay.Outcome, error) {
			return relay.Outcome{
				PublishedAt: time.Now(),
				Published:   []uuid.UUID{ids[0]},
				Retry:       []relay.Failure{{ID: ids[1], Error: "throttled", NextAttemptAt: time.Now().Add(time.Hour)}},
				Dead:        []relay.Failure{{ID: ids[2], Error: "too big"}},
			}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []struct {
			status   string
			attempts int
		}{{"PUBLISHED", 0}, {"PENDING", 1}, {"DEAD", 1}}
		for i, w := range want {
			if s, a := h.State(t, ids[i]); s != w.status || a != w.attempts {
				t.Errorf("row %d: got %s attempts=%d, want %s attempts=%d", i, s, a, w.status, w.attempts)
			}
		}
		// Published and dead rows are done; the retry is an hour away.
		n, err := h.Store.ClaimBatch(context.Background(), 10, func([]relay.Message) (relay.Outcome, error) {
			t.Error("fn called with nothing due")
			return relay.Outcome{}, nil
		})
		if err != nil || n != 0 {
			t.Errorf("claim after the outcome: got %d, %v; want 0, nil", n, err)
		}
	})

	t.Run("an error from fn leaves every row as it was", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		ids := h.Insert(t, 2)
		boom := errors.New("boom")
		_, err := h.Store.ClaimBatch(context.Background(), 10, func([]relay.Message) (relay.Outcome, error) {
			return relay.Outcome{Published: ids}, boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want %v", err, boom)
		}
		for _, id := range ids {
			if s, a := h.State(t, id); s != "PENDING" || a != 0 {
				t.Errorf("row %s: got %s attempts=%d, want PENDING attempts=0", id, s, a)
			}
		}
	})

	t.Run("concurrent claims take disjoint rows", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.Insert(t, 4)
		holding, release := make(chan []relay.Message), make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := h.Store.ClaimBatch(context.Background(), 2, func(msgs []relay.Message) (relay.Outcome, error) {
				holding <- msgs
				<-release
				return relay.Outcome{}, nil
			})
			if err != nil {
				t.Error(err)
			}
		})
		first := <-holding
		var second []relay.Message
		_, err := h.Store.ClaimBatch(context.Background(), 10, func(msgs []relay.Message) (relay.Outcome, error) {
			second = msgs
			return relay.Outcome{}, nil
		})
		close(release)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if len(first) != 2 || len(second) != 2 {
			t.Fatalf("got batches of %d and %d, want 2 and 2", len(first), len(second))
		}
		for _, a := range first {
			for _, b := range second {
				if a.ID == b.ID {
					t.Errorf("row %s claimed by both", a.ID)
				}
			}
		}
	})
}
