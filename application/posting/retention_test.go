package posting_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/posting"
)

func TestCheckRetention(t *testing.T) {
	tests := []struct {
		inbox  time.Duration
		queues []time.Duration
		ok     bool
	}{
		{360 * time.Hour, []time.Duration{336 * time.Hour}, true}, // defaults vs SQS maximum
		{359 * time.Hour, []time.Duration{336 * time.Hour}, false},
		{120 * time.Hour, []time.Duration{96 * time.Hour, 24 * time.Hour}, true},
		{100 * time.Hour, []time.Duration{24 * time.Hour, 96 * time.Hour}, false}, // the longest counts
	}
	for _, tt := range tests {
		err := posting.CheckRetention(tt.inbox, tt.queues...)
		if got := err == nil; got != tt.ok {
			t.Errorf("CheckRetention(%s, %v): got %v, want ok=%v", tt.inbox, tt.queues, err, tt.ok)
		}
		if err != nil && !errors.Is(err, posting.ErrRetentionTooShort) {
			t.Errorf("got %v, want ErrRetentionTooShort", err)
		}
	}
}

func TestInboxJanitorSweepsInBatches(t *testing.T) {
	m := newMemStore()
	for i, age := range []time.Duration{1, 2, 3, 4, 5, 400, 400} {
		id := [...]string{msgA, msgB, msgC, "a", "b", "c", "d"}[i]
		m.inbox[id] = posting.InboxMessage{ID: id, ReceivedAt: now.Add(-age * time.Hour)}
	}
	j := posting.NewInboxJanitor(m, 360*time.Hour, 1, func() time.Time { return now })
	n, err := j.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || len(m.inbox) != 5 {
		t.Errorf("got %d deleted, %d left; want 2 deleted, 5 left", n, len(m.inbox))
	}
	if m.deleted != 3 {
		t.Errorf("DELETE statements: got %d, want 3 (two full batches, one short)", m.deleted)
	}
}
