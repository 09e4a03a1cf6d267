package outboxtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
)

// Harness gives the contract a fresh, empty store plus what the port itself does
// not offer: committing PENDING rows (the write side's job) and reading a row's
// state back.
type Harness struct {
	Store outbox.Store
	// Insert commits n due PENDING rows, each of its own aggregate, oldest
	// first, and returns their ids.
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
		n, err := h.Store.Claim(context.Background(), 3, func(_ context.Context, msgs []outbox.Message) outbox.Result {
			for _, m := range msgs {
				got = append(got, m.ID)
			}
			return outbox.Result{}
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

	t.Run("writes the result", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		ids := h.Insert(t, 3)
		_, err := h.Store.Claim(context.Background(), 10, func(context.Context, []outbox.Message) outbox.Result {
			return outbox.Result{
				PublishedAt: time.Now(),
				Published:   []uuid.UUID{ids[0]},
				Retry:       []outbox.Failure{{ID: ids[1], Error: "throttled", NextAttemptAt: time.Now().Add(time.Hour)}},
				Dead:        []outbox.Failure{{ID: ids[2], Error: "too big"}},
			}
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
		n, err := h.Store.Claim(context.Background(), 10, func(context.Context, []outbox.Message) outbox.Result {
			t.Error("publish called with nothing due")
			return outbox.Result{}
		})
		if err != nil || n != 0 {
			t.Errorf("claim after the result: got %d, %v; want 0, nil", n, err)
		}
	})

	t.Run("a stop mid-publish still writes the result", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		ids := h.Insert(t, 2)
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		_, err := h.Store.Claim(ctx, 10, func(pctx context.Context, _ []outbox.Message) outbox.Result {
			stop() // the relay is told to stop while the batch is at the broker
			if pctx.Err() != nil {
				t.Errorf("publish's context ended with the claim's: %v; want it to outlive the stop", pctx.Err())
			}
			return outbox.Result{PublishedAt: time.Now(), Published: ids}
		})
		if err != nil {
			t.Fatalf("claim stopped mid-publish: %v, want nil: the acknowledged rows must be marked", err)
		}
		for _, id := range ids {
			if s, _ := h.State(t, id); s != "PUBLISHED" {
				t.Errorf("row %s: got %s, want PUBLISHED", id, s)
			}
		}
	})

	t.Run("past the deadline nothing is written", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		ids := h.Insert(t, 2)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := h.Store.Claim(ctx, 10, func(pctx context.Context, _ []outbox.Message) outbox.Result {
			<-pctx.Done() // only the deadline ends it: a broker that never answers
			return outbox.Result{PublishedAt: time.Now(), Published: ids}
		})
		if err == nil {
			t.Error("claim past its deadline returned nil; want the error")
		}
		for _, id := range ids {
			if s, a := h.State(t, id); s != "PENDING" || a != 0 {
				t.Errorf("row %s: got %s attempts=%d, want PENDING attempts=0 as before the claim", id, s, a)
			}
		}
	})

	t.Run("concurrent claims take disjoint rows", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.Insert(t, 4)
		holding, release := make(chan []outbox.Message), make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := h.Store.Claim(context.Background(), 2, func(_ context.Context, msgs []outbox.Message) outbox.Result {
				holding <- msgs
				<-release
				return outbox.Result{}
			})
			if err != nil {
				t.Error(err)
			}
		})
		first := <-holding
		var second []outbox.Message
		_, err := h.Store.Claim(context.Background(), 10, func(_ context.Context, msgs []outbox.Message) outbox.Result {
			second = msgs
			return outbox.Result{}
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
