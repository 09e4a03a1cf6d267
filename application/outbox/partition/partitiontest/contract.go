package partitiontest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
)

// Harness gives the contract a fresh, empty store plus what the port itself
// does not offer: committing PENDING rows and reading a row's state back.
type Harness struct {
	Store partition.Store
	// InsertFor commits n due PENDING rows of one aggregate, in order, and
	// returns their ids.
	InsertFor func(t *testing.T, aggregate uuid.UUID, n int) []uuid.UUID
	// State returns a row's status (PENDING, PUBLISHED or DEAD) and attempts.
	State func(t *testing.T, id uuid.UUID) (status string, attempts int)
}

// RunContract runs the contract; newHarness must return an empty store each call.
func RunContract(t *testing.T, newHarness func(t *testing.T) Harness) {
	// all takes every lease for owner and returns the claim of every
	// partition in its name.
	all := func(t *testing.T, h Harness, owner string) partition.Claim {
		t.Helper()
		a, err := h.Store.Heartbeat(context.Background(), owner, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Owned) != a.Partitions {
			t.Fatalf("alone, %s holds %d of %d partitions, want all", owner, len(a.Owned), a.Partitions)
		}
		return partition.Claim{Limit: 10, Partitions: a.Partitions, Owned: a.Owned, Owner: owner}
	}

	t.Run("claims only from the partitions named", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		c := all(t, h, "contract")
		aggs := make([]uuid.UUID, 20)
		for i := range aggs {
			aggs[i] = uuid.New()
			h.InsertFor(t, aggs[i], 1)
		}
		p := partition.Of(aggs[0], c.Partitions)
		c.Limit, c.Owned = 100, []int{p}
		var got []outbox.Message
		_, err := h.Store.ClaimInOrder(context.Background(), c, func(_ context.Context, msgs []outbox.Message) outbox.Result {
			got = msgs
			return outbox.Result{}
		})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, agg := range aggs {
			if partition.Of(agg, c.Partitions) == p {
				want++
			}
		}
		if len(got) != want {
			t.Errorf("claimed %d rows of partition %d, want %d", len(got), p, want)
		}
		for _, m := range got {
			if q := partition.Of(m.AggregateID, c.Partitions); q != p {
				t.Errorf("row %s of partition %d claimed from partition %d", m.ID, q, p)
			}
		}
	})

	t.Run("claims nothing from a named partition whose lease the owner does not hold", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		c := all(t, h, "holder")
		agg := uuid.New()
		h.InsertFor(t, agg, 1)
		p := partition.Of(agg, c.Partitions)
		// "holder" has every partition: a claim in another's name, as a
		// replica whose assignment went stale would make, reads nothing;
		// the holder's reads the row.
		for _, owner := range []string{"stale", "holder"} {
			for _, owned := range [][]int{{p}, {p, (p + 1) % c.Partitions}} {
				slices.Sort(owned)
				var got int
				_, err := h.Store.ClaimInOrder(context.Background(), partition.Claim{Limit: 10, Partitions: c.Partitions, Owned: owned, Owner: owner},
					func(_ context.Context, msgs []outbox.Message) outbox.Result {
						got = len(msgs)
						return outbox.Result{}
					})
				if err != nil {
					t.Fatal(err)
				}
				want := 0
				if owner == "holder" {
					want = 1
				}
				if got != want {
					t.Errorf("claim as %q (partitions %v) read %d rows, want %d", owner, owned, got, want)
				}
			}
		}
	})

	t.Run("one row per aggregate, none behind a retry", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		c := all(t, h, "contract")
		x, y := uuid.New(), uuid.New()
		xs := h.InsertFor(t, x, 3)
		ys := h.InsertFor(t, y, 2)
		claim := func(out func([]outbox.Message) outbox.Result) []uuid.UUID {
			t.Helper()
			var got []uuid.UUID
			_, err := h.Store.ClaimInOrder(context.Background(), c, func(_ context.Context, msgs []outbox.Message) outbox.Result {
				for _, m := range msgs {
					got = append(got, m.ID)
				}
				return out(msgs)
			})
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		// x's first row fails; y's is published.
		got := claim(func([]outbox.Message) outbox.Result {
			return outbox.Result{PublishedAt: time.Now(), Published: []uuid.UUID{ys[0]},
				Retry: []outbox.Failure{{ID: xs[0], Error: "throttled", NextAttemptAt: time.Now().Add(time.Hour)}}}
		})
		if !sameSet(got, []uuid.UUID{xs[0], ys[0]}) {
			t.Fatalf("first ordered claim: got %v, want the first row of each aggregate %v", got, []uuid.UUID{xs[0], ys[0]})
		}
		// x waits for its retry: only y's next row goes, nothing of x.
		got = claim(func(msgs []outbox.Message) outbox.Result {
			return outbox.Result{PublishedAt: time.Now(), Published: []uuid.UUID{msgs[0].ID}}
		})
		if !slices.Equal(got, []uuid.UUID{ys[1]}) {
			t.Fatalf("second ordered claim: got %v, want only %v (x is behind its retry)", got, ys[1])
		}
		if s, _ := h.State(t, xs[1]); s != "PENDING" {
			t.Errorf("x's second row: %s, want PENDING behind the first", s)
		}
	})

	t.Run("a claim waits for rows another claim holds", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		c := all(t, h, "contract")
		x := uuid.New()
		xs := h.InsertFor(t, x, 2)
		// The first claim holds x's first row only, as one does whose window
		// ends there: x's second row is free to lock, and a claim that skipped
		// held rows would take it while the first is at the broker.
		holding, release := make(chan []outbox.Message), make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			one := c
			one.Limit = 1
			_, err := h.Store.ClaimInOrder(context.Background(), one, func(_ context.Context, msgs []outbox.Message) outbox.Result {
				holding <- msgs
				<-release
				return outbox.Result{PublishedAt: time.Now(), Published: []uuid.UUID{msgs[0].ID}}
			})
			if err != nil {
				t.Error(err)
			}
		})
		first := <-holding
		if len(first) != 1 || first[0].ID != xs[0] {
			t.Fatalf("first claim: got %v, want %v", first, xs[:1])
		}
		secondDone := make(chan []uuid.UUID, 1)
		wg.Go(func() {
			var got []uuid.UUID
			_, err := h.Store.ClaimInOrder(context.Background(), c, func(_ context.Context, msgs []outbox.Message) outbox.Result {
				for _, m := range msgs {
					got = append(got, m.ID)
				}
				if s, _ := h.State(t, xs[0]); len(got) > 0 && got[0] == xs[1] && s != "PUBLISHED" {
					t.Errorf("x's second row claimed while its first is %s: it overtook a row at the broker", s)
				}
				return outbox.Result{}
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
		if !slices.Equal(got, xs[1:]) && len(got) != 0 {
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
		if len(a.Owned)+len(b.Owned) != a.Partitions || len(a.Owned) != partition.FairShare(a.Partitions, []string{"a", "b"}, "a") {
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

// sameSet reports whether a and b hold the same ids, in any order: the
// rows of one ordered claim come in partition order, not in write order
// across aggregates.
func sameSet(a, b []uuid.UUID) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	cmp := func(x, y uuid.UUID) int { return slices.Compare(x[:], y[:]) }
	slices.SortFunc(a, cmp)
	slices.SortFunc(b, cmp)
	return slices.Equal(a, b)
}
