package ledgers

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/payments-outbox/payments-outbox/application/inbox"
)

// TestEveryPublishedEventIsPostedOrIgnored reads the payments service's
// published events, one document per type and data version in docs/events
// (the producer's tests keep them byte for byte): each must apply as its registry kind —
// a balanced transaction when its rule posts one —, or be listed as deliberately ignored.
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
				t.Errorf("event type %q (%s) is published, but the ledger neither posts it nor lists it as ignored: add it to the registry in application/ledgers/events.go", ev.Type, filepath.Base(path))
			}
			continue
		}
		version, err := ev.Version()
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(path), err)
			continue
		}
		in, err := Handler{}.Check(ev, version)
		if err != nil {
			t.Errorf("%s: %v: the registry in application/ledgers/events.go cannot post it", filepath.Base(path), err)
			continue
		}
		kind := r.postings.Kind
		if in.Kind() != kind || in.MessageID() != ev.ID {
			t.Errorf("%s: kind %q message %s, want kind %q, message %s", filepath.Base(path), in.Kind(), in.MessageID(), kind, ev.ID)
		}
		tx, posts := in.Transaction()
		if posts != r.effect.posts() || (posts && (!tx.Balanced() || tx.Kind() != kind || tx.MessageID() != ev.ID)) {
			t.Errorf("%s: posts=%v balanced=%v kind %q message %s, want posts=%v, a balanced transaction of kind %q, message %s",
				filepath.Base(path), posts, tx.Balanced(), tx.Kind(), tx.MessageID(), r.effect.posts(), kind, ev.ID)
		}
	}
	for typ := range ignored {
		if _, ok := rules[typ]; ok {
			t.Errorf("event type %q is both posted and ignored", typ)
		}
	}
}
