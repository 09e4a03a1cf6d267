// Package relaytest holds the relay's test doubles and the contract every
// relay.Store must honour: FakeStore, an in-memory outbox for the relay's unit
// tests, and RunContract, one suite that runs against the fake and the Postgres
// store alike. Because the fake passes it, tests written with the fake say
// something true about production.
package relaytest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/relay"
)

// Harness gives the contract a fresh, empty store plus what the port itself does
// not offer: committing PENDING rows (the write side's job) and reading a row's
// state back.
type Harness struct {
	Store relay.Store
	// Insert commits n due PENDING rows, each of its own aggregate, oldest
	// first, and returns their ids.
	Insert func(t *testing.T, n int) []uuid.UUID
	// InsertFor commits n due PENDING rows of one aggregate, in order, and
	// returns their ids.
	InsertFor func(t *testing.T, aggregate uuid.UUID, n int) []uuid.UUID
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
		n, err := h.Store.ClaimBatch(context.Background(), relay.Claim{Limit: 3}, func(msgs []outbox.Message) (relay.BatchResult, error) {
			for _, m := range msgs {
				got = append(got, m.ID)
			}
			return relay.BatchResult{}, nil
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

	t.Run("writes the batch result", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		ids := h.Insert(t, 3)
		_, err := h.Store.ClaimBatch(context.Background(), relay.Claim{Limit: 10}, func([]outbox.Message) (relay.BatchResult, error) {
			return relay.BatchResult{
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
		n, err := h.Store.ClaimBatch(context.Background(), relay.Claim{Limit: 10}, func([]outbox.Message) (relay.BatchResult, error) {
			t.Error("fn called with nothing due")
			return relay.BatchResult{}, nil
		})
		if err != nil || n != 0 {
			t.Errorf("claim after the batch result: got %d, %v; want 0, nil", n, err)
		}
	})

	t.Run("an error from fn leaves every row as it was", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		ids := h.Insert(t, 2)
		boom := errors.New("boom")
		_, err := h.Store.ClaimBatch(context.Background(), relay.Claim{Limit: 10}, func([]outbox.Message) (relay.BatchResult, error) {
			return relay.BatchResult{Published: ids}, boom
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
		holding, release := make(chan []outbox.Message), make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := h.Store.ClaimBatch(context.Background(), relay.Claim{Limit: 2}, func(msgs []outbox.Message) (relay.BatchResult, error) {
				holding <- msgs
				<-release
				return relay.BatchResult{}, nil
			})
			if err != nil {
				t.Error(err)
			}
		})
		first := <-holding
		var second []outbox.Message
		_, err := h.Store.ClaimBatch(context.Background(), relay.Claim{Limit: 10}, func(msgs []outbox.Message) (relay.BatchResult, error) {
			second = msgs
			return relay.BatchResult{}, nil
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

	t.Run("claims only from the partitions named", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		a, err := h.Store.Heartbeat(context.Background(), "contract", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		aggs := make([]uuid.UUID, 20)
		for i := range aggs {
			aggs[i] = uuid.New()
			h.InsertFor(t, aggs[i], 1)
		}
		p := relay.PartitionOf(aggs[0], a.Partitions)
		var got []outbox.Message
		_, err = h.Store.ClaimBatch(context.Background(), relay.Claim{Limit: 100, Partitions: a.Partitions, Owned: []int{p}, Owner: "contract"},
			func(msgs []outbox.Message) (relay.BatchResult, error) {
				got = msgs
				return relay.BatchResult{}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, agg := range aggs {
			if relay.PartitionOf(agg, a.Partitions) == p {
				want++
			}
		}
		if len(got) != want {
			t.Errorf("claimed %d rows of partition %d, want %d", len(got), p, want)
		}
		for _, m := range got {
			if q := relay.PartitionOf(m.AggregateID, a.Partitions); q != p {
				t.Errorf("row %s of partition %d claimed from partition %d", m.ID, q, p)
			}
		}
	})

	t.Run("claims nothing from a named partition whose lease the owner does not hold", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		a, err := h.Store.Heartbeat(context.Background(), "holder", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		agg := uuid.New()
		h.InsertFor(t, agg, 1)
		p := relay.PartitionOf(agg, a.Partitions)
		// "holder" has every partition: a claim in another's name, as a
		// replica whose assignment went stale would make, and one in no
		// one's, read nothing; the holder's reads the row.
		for _, owner := range []string{"stale", "holder"} {
			for _, ordered := range []bool{false, true} {
				for _, owned := range [][]int{{p}, {p, (p + 1) % a.Partitions}} {
					slices.Sort(owned)
					var got int
					_, err := h.Store.ClaimBatch(context.Background(), relay.Claim{Limit: 10, Partitions: a.Partitions, Owned: owned, Owner: owner, Ordered: ordered},
						func(msgs []outbox.Message) (relay.BatchResult, error) {
							got = len(msgs)
							return relay.BatchResult{}, nil
						})
					if err != nil {
						t.Fatal(err)
					}
					want := 0
					if owner == "holder" {
						want = 1
					}
					if got != want {
						t.Errorf("claim as %q (ordered %v, partitions %v) read %d rows, want %d", owner, ordered, owned, got, want)
					}
				}
			}
		}
	})

	t.Run("ordered: one row per aggregate, none behind a retry", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		x, y := uuid.New(), uuid.New()
		xs := h.InsertFor(t, x, 3)
		ys := h.InsertFor(t, y, 2)
		ordered := relay.Claim{Limit: 10, Ordered: true}
		claim := func(out func([]outbox.Message) relay.BatchResult) []uuid.UUID {
			t.Helper()
			var got []uuid.UUID
			_, err := h.Store.ClaimBatch(context.Background(), ordered, func(msgs []outbox.Message) (relay.BatchResult, error) {
				for _, m := range msgs {
					got = append(got, m.ID)
				}
				return out(msgs), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		// x's first row fails; y's is published.
		got := claim(func([]outbox.Message) relay.BatchResult {
			return relay.BatchResult{PublishedAt: time.Now(), Published: []uuid.UUID{ys[0]},
				Retry: []relay.Failure{{ID: xs[0], Error: "throttled", NextAttemptAt: time.Now().Add(time.Hour)}}}
		})
		if !sameIDs(got, []uuid.UUID{xs[0], ys[0]}) {
			t.Fatalf("first ordered claim: got %v, want the first row of each aggregate %v", got, []uuid.UUID{xs[0], ys[0]})
		}
		// x waits for its retry: only y's next row goes, nothing of x.
		got = claim(func(msgs []outbox.Message) relay.BatchResult {
			return relay.BatchResult{PublishedAt: time.Now(), Published: []uuid.UUID{msgs[0].ID}}
		})
		if !sameIDs(got, []uuid.UUID{ys[1]}) {
			t.Fatalf("second ordered claim: got %v, want only %v (x is behind its retry)", got, ys[1])
		}
		if s, _ := h.State(t, xs[1]); s != "PENDING" {
			t.Errorf("x's second row: %s, want PENDING behind the first", s)
		}
	})

	t.Run("ordered: a claim waits for rows another claim holds", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		x := uuid.New()
		xs := h.InsertFor(t, x, 2)
		// The first claim holds x's first row only, as one does whose window
		// ends there: x's second row is free to lock, and a claim that skipped
		// held rows would take it while the first is at the broker.
		holding, release := make(chan []outbox.Message), make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := h.Store.ClaimBatch(context.Background(), relay.Claim{Limit: 1, Ordered: true}, func(msgs []outbox.Message) (relay.BatchResult, error) {
				holding <- msgs
				<-release
				return relay.BatchResult{PublishedAt: time.Now(), Published: []uuid.UUID{msgs[0].ID}}, nil
			})
			if err != nil {
				t.Error(err)
			}
		})
		first := <-holding
		if !sameIDs(msgIDs(first), xs[:1]) {
			t.Fatalf("first claim: got %v, want %v", msgIDs(first), xs[:1])
		}
		secondDone := make(chan []uuid.UUID, 1)
		wg.Go(func() {
			var got []uuid.UUID
			_, err := h.Store.ClaimBatch(context.Background(), relay.Claim{Limit: 10, Ordered: true}, func(msgs []outbox.Message) (relay.BatchResult, error) {
				got = msgIDs(msgs)
				if s, _ := h.State(t, xs[0]); len(got) > 0 && got[0] == xs[1] && s != "PUBLISHED" {
					t.Errorf("x's second row claimed while its first is %s: it overtook a row at the broker", s)
				}
				return relay.BatchResult{}, nil
			})
			if err != nil {
				t.Error(err)
			}
			secondDone <- got
		})
		// The first claim holds on for a while: a store that waits blocks the
		// second claim all along; one that skips has claimed past the held row
		// by then. (The pause only gives a wrong store time to show itself: a
		// right one passes however long it is.)
		var got []uuid.UUID
		returned := false
		select {
		case got = <-secondDone:
			returned = true
			t.Errorf("second claim returned %v while the first held x's first row: it must wait for it", got)
		case <-time.After(200 * time.Millisecond):
		}
		close(release)
		wg.Wait()
		if !returned {
			got = <-secondDone
		}
		if !sameIDs(got, xs[1:]) && len(got) != 0 {
			t.Errorf("second claim: got %v, want %v or nothing", got, xs[1:])
		}
	})

	t.Run("leases: replicas split the partitions without overlap", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		ctx := context.Background()
		a, err := h.Store.Heartbeat(ctx, "a", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Owned) != a.Partitions || a.Took != a.Partitions || a.Replicas != 1 {
			t.Fatalf("alone, a holds %d of %d (took %d) and counts %d replicas, want all and 1", len(a.Owned), a.Partitions, a.Took, a.Replicas)
		}
		b, err := h.Store.Heartbeat(ctx, "b", time.Minute) // nothing free yet
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Owned) != 0 {
			t.Fatalf("b took %v while a held every lease", b.Owned)
		}
		a, err = h.Store.Heartbeat(ctx, "a", time.Minute) // a sees b, gives up half
		if err != nil {
			t.Fatal(err)
		}
		b, err = h.Store.Heartbeat(ctx, "b", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Owned)+len(b.Owned) != a.Partitions || len(a.Owned) != relay.FairShare(a.Partitions, []string{"a", "b"}, "a") {
			t.Errorf("after rebalancing a holds %v and b %v of %d", a.Owned, b.Owned, a.Partitions)
		}
		if a.Replicas != 2 || b.Replicas != 2 {
			t.Errorf("a and b count %d and %d replicas alive, want 2", a.Replicas, b.Replicas)
		}
		for _, p := range a.Owned {
			if slices.Contains(b.Owned, p) {
				t.Errorf("partition %d held by both", p)
			}
		}
		if err := h.Store.Release(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		a, err = h.Store.Heartbeat(ctx, "a", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Owned) != a.Partitions || a.Replicas != 1 {
			t.Errorf("after b released, a holds %d of %d and counts %d replicas, want all and 1", len(a.Owned), a.Partitions, a.Replicas)
		}
	})

	t.Run("leases: an expired lease is taken over", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		ctx := context.Background()
		const ttl = 200 * time.Millisecond
		sent := time.Now()
		a, err := h.Store.Heartbeat(ctx, "crashed", ttl)
		if err != nil {
			t.Fatal(err)
		}
		expiry := sent.Add(ttl) // the earliest the leases can expire
		deadline := time.Now().Add(10 * time.Second)
		for {
			b, err := h.Store.Heartbeat(ctx, "survivor", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Owned) > 0 && time.Now().Before(expiry) {
				t.Fatalf("survivor took %v before the crashed replica's leases expired", b.Owned)
			}
			if len(b.Owned) == a.Partitions {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("survivor holds %d of %d partitions 10s after the leases expired", len(b.Owned), a.Partitions)
			}
			time.Sleep(ttl / 10) // polling the heartbeat, as a replica does
		}
	})
}

func msgIDs(msgs []outbox.Message) []uuid.UUID {
	ids := make([]uuid.UUID, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return ids
}

func sameIDs(a, b []uuid.UUID) bool { return slices.Equal(a, b) }
