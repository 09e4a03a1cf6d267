package inbox_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
)

// TestReceiveRefusesWhatTheSchemaRefuses: an event the schemas refuse is
// invalid, like one the handler refuses: no inbox row, so its redeliveries
// reach the DLQ instead of passing for duplicates.
func TestReceiveRefusesWhatTheSchemaRefuses(t *testing.T) {
	schemas := &inboxtest.FakeSchemas{Refuse: errors.New(`data does not match: at "/data": additional properties 'note' not allowed`)}
	r := newRig(newNotebook(), schemas, nil, inbox.ProcessorConfig{})
	_, err := r.sync.Receive(context.Background(), noted(msgA, "k1", 7))
	if !errors.Is(err, inbox.ErrInvalidEvent) || !strings.Contains(err.Error(), "additional properties") {
		t.Errorf("got %v, want ErrInvalidEvent saying what the schema refused", err)
	}
	if len(r.store.Inbox()) != 0 || len(r.pages.written()) != 0 {
		t.Errorf("got %d inbox rows and %d notes, want none", len(r.store.Inbox()), len(r.pages.written()))
	}
	if got, want := schemas.Asked(), []string{typeNoted + "/v1"}; !slices.Equal(got, want) {
		t.Errorf("schemas asked %v, want %v", got, want)
	}
}

// TestReceiveChecksTheVersionTheEventNames: the version comes from
// dataschema; an event without one, or of a version the handler does not
// decode, is refused before any schema is asked.
func TestReceiveChecksTheVersionTheEventNames(t *testing.T) {
	const schema = `"dataschema":"https://payments-outbox.example/schemas/events/note.added/v1.json",`
	good := string(noted(msgA, "k1", 7))
	if !strings.Contains(good, schema) {
		t.Fatalf("noted carries no %s:\n%s", schema, good)
	}
	tests := []struct {
		name  string
		body  string
		asked []string // nil: refused as invalid before the schemas are asked
	}{
		{"version 1", good, []string{"note.added/v1"}},
		{"a version the handler does not decode", strings.Replace(good, `/v1.json"`, `/v2.json"`, 1), nil},
		{"no dataschema", strings.Replace(good, schema, ``, 1), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			schemas := &inboxtest.FakeSchemas{}
			res, err := newRig(newNotebook(), schemas, nil, inbox.ProcessorConfig{}).sync.Receive(context.Background(), []byte(tt.body))
			if tt.asked == nil {
				if !errors.Is(err, inbox.ErrInvalidEvent) {
					t.Errorf("got %v, %v; want ErrInvalidEvent", res.Disposition, err)
				}
			} else if err != nil || res.Disposition != inbox.Applied {
				t.Errorf("got %v, %v; want applied", res.Disposition, err)
			}
			if got := schemas.Asked(); !slices.Equal(got, tt.asked) {
				t.Errorf("schemas asked %v, want %v", got, tt.asked)
			}
		})
	}
}

// TestReceiveDoesNotCheckTypesItDoesNotApply: an event type the handler does
// not know has no schema here; it is recorded and acknowledged.
func TestReceiveDoesNotCheckTypesItDoesNotApply(t *testing.T) {
	schemas := &inboxtest.FakeSchemas{Refuse: errors.New("refuses everything")}
	body := strings.Replace(string(noted(msgA, "k1", 7)), `"type":"note.added"`, `"type":"note.erased"`, 1)
	res, err := newRig(newNotebook(), schemas, nil, inbox.ProcessorConfig{}).sync.Receive(context.Background(), []byte(body))
	if err != nil || res.Disposition != inbox.Ignored {
		t.Errorf("got %v, %v; want ignored", res.Disposition, err)
	}
	if got := schemas.Asked(); len(got) != 0 {
		t.Errorf("schemas asked %v, want nothing", got)
	}
}
