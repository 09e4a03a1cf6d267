package bookkeeping

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/payments-outbox/payments-outbox/application/inbox"
)

// TestEveryPublishedEventIsPostedOrIgnored reads the payments service's
// published events, one document per type and data version in docs/events
// (the producer's tests keep them byte for byte): each must post a balanced
// transaction of its registry kind, or be listed as deliberately ignored.
func TestEveryPublishedEventIsPostedOrIgnored(t *testing.T) {
	docs, err := filepath.Glob("../../docs/events/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no documents in docs/events")
	}
	for _, path := range docs {
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := inbox.Decode(body)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		r, ok := rules[ev.Type]
		if !ok {
			if ignored[ev.Type] == "" {
				t.Errorf("event type %q (%s) is published, but the ledger neither posts it nor lists it as ignored: add it to the registry in application/bookkeeping/events.go", ev.Type, filepath.Base(path))
			}
			continue
		}
		version, err := ev.Version()
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(path), err)
			continue
		}
		tx, err := Handler{}.Check(ev, version)
		if err != nil {
			t.Errorf("%s: %v: the registry in application/bookkeeping/events.go cannot post it", filepath.Base(path), err)
			continue
		}
		if tx.Kind() != r.kind || !tx.Balanced() || tx.MessageID() != ev.ID {
			t.Errorf("%s: posted kind %q balanced=%v message %s, want kind %q, balanced, message %s",
				filepath.Base(path), tx.Kind(), tx.Balanced(), tx.MessageID(), r.kind, ev.ID)
		}
	}
	for typ := range ignored {
		if _, ok := rules[typ]; ok {
			t.Errorf("event type %q is both posted and ignored", typ)
		}
	}
}
