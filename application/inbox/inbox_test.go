package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
)

// TestTheSyncPathAlone runs Inbox without what NewService wraps it in: it
// applies a message once, and refuses, writing nothing, a type its handler
// does not apply (to the DLQ) and a refusal for good (to redelivery). The
// wrappers are what keep the one and park the other.
func TestTheSyncPathAlone(t *testing.T) {
	p := &pages{}
	store := inboxtest.NewFakeStore(p)
	in := inbox.New(store, newNotebook(), &inboxtest.FakeSchemas{}, func() time.Time { return now })
	ctx := context.Background()

	var got []string
	for _, b := range [][]byte{noted(msgA, "k1", 7), noted(msgA, "k1", 7), noted(msgB, "k1", 7)} {
		res, err := in.Receive(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.Disposition.String())
	}
	if want := "applied,duplicate,duplicate"; strings.Join(got, ",") != want {
		t.Errorf("dispositions: got %v, want %s (a redelivery, then the same fact under another id)", got, want)
	}
	if notes := p.written(); len(notes) != 1 || !store.Inbox()[msgA].ProcessedAt.Equal(now) ||
		!strings.Contains(store.Inbox()[msgB].Error, "business key") {
		t.Errorf("notes %+v, rows %+v: want one note, %s processed now, %s noted", notes, store.Inbox(), msgA, msgB)
	}

	unknown := strings.Replace(string(noted(msgC, "k2", 1)), `"type":"note.added"`, `"type":"note.erased"`, 1)
	if _, err := in.Receive(ctx, []byte(unknown)); !errors.Is(err, inbox.ErrInvalidEvent) {
		t.Errorf("a type the handler does not apply: got %v, want ErrInvalidEvent", err)
	}
	p.refuseCommitsOf("k3", fmt.Errorf("%w: k3 would overflow its page", inbox.ErrPermanent))
	if _, err := in.Receive(ctx, noted(msgC, "k3", 1)); !errors.Is(err, inbox.ErrPermanent) {
		t.Errorf("a refusal for good: got %v, want ErrPermanent", err)
	}
	if _, ok := store.Inbox()[msgC]; ok || len(store.Inbox()) != 2 {
		t.Errorf("inbox rows: got %d (%s present: %v), want the first two alone", len(store.Inbox()), msgC, ok)
	}
}
