package partition

import (
	"context"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/turns"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// membersStore answers each heartbeat with replicas alive.
type membersStore struct{ replicas int }

func (s *membersStore) ClaimInOrder(context.Context, Claim, func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	return 0, nil
}

func (s *membersStore) Heartbeat(context.Context, string, time.Duration) (Assignment, error) {
	return Assignment{Partitions: 8, Owned: []int{0, 1}, Replicas: s.replicas}, nil
}

func (s *membersStore) Release(context.Context, string) error { return nil }

// TestTurnsFollowTheReplicasAlive: a replica alone has every one of
// ActiveClaims' turns; with others alive, its share of them, at least one.
func TestTurnsFollowTheReplicasAlive(t *testing.T) {
	t.Parallel()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	store := &membersStore{}
	o := NewOrdered(store, logtest.Discard(), nil, Config{ActiveClaims: 4})
	for _, c := range []struct{ replicas, want int }{{1, 4}, {2, 2}, {3, 1}, {8, 1}} {
		store.replicas = c.replicas
		if err := o.Heartbeat(context.Background()); err != nil {
			t.Fatal(err)
		}
		var taken []*turns.Turn
		for len(taken) <= c.want {
			turn, ok := o.turns.Take(ended) // a free turn, or none at once
			if !ok {
				break
			}
			taken = append(taken, turn)
		}
		if len(taken) != c.want {
			t.Errorf("%d replicas alive: %d turns at once, want %d", c.replicas, len(taken), c.want)
		}
		for _, turn := range taken {
			turn.Pass()
		}
	}
}

// onePartition holds one partition, empty.
type onePartition struct{ *membersStore }

func (onePartition) Heartbeat(context.Context, string, time.Duration) (Assignment, error) {
	return Assignment{Partitions: 8, Owned: []int{5}, Replicas: 1}, nil
}

// TestAnEmptyClaimEnds: a claim of the one partition a replica holds, with
// nothing in it, returns nothing — it goes on to another partition only
// after draining one of the backlog.
func TestAnEmptyClaimEnds(t *testing.T) {
	t.Parallel()
	o := NewOrdered(onePartition{&membersStore{}}, logtest.Discard(), nil, Config{})
	done := make(chan int)
	go func() {
		n, _ := o.Claim(context.Background(), 10, func(context.Context, []outbox.Message) outbox.Result { return outbox.Result{} })
		done <- n
	}()
	select {
	case n := <-done:
		if n != 0 {
			t.Errorf("claim of an empty partition: %d, want 0", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a claim of an empty partition did not return in 10s: it claims it again and again")
	}
}
