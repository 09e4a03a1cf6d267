package paymentstore

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
	"github.com/payments-outbox/payments-outbox/api"
)

// TestPublishedEventsMatchTheirSchemas: every event type is published naming
// the schema of its data at its registry version, a file in api/events, and
// matches it and the envelope's schema; the ledger checks what it receives
// against the same files. (api's tests give each schema its message in the
// AsyncAPI document, so a registry entry without a schema fails here, and one
// without a message there.)
func TestPublishedEventsMatchTheirSchemas(t *testing.T) {
	v, err := eventschema.New()
	if err != nil {
		t.Fatal(err)
	}
	all := samples(t)
	for _, typ := range slices.Sorted(maps.Keys(wireForms)) {
		t.Run(typ, func(t *testing.T) {
			forEachTraceContext(t, func(t *testing.T, tc traceContext) {
				got := encodeSample(t, all, typ, tc)
				var doc struct {
					DataSchema string `json:"dataschema"`
				}
				if err := json.Unmarshal(got, &doc); err != nil {
					t.Fatal(err)
				}
				if want := api.EventSchemaID(typ, wireForms[typ].dataVersion); doc.DataSchema != want {
					t.Errorf("dataschema: got %q, want %q", doc.DataSchema, want)
				}
				if err := v.Check(got); err != nil {
					t.Errorf("%v: the schema in api/events and the wire struct in adapters/postgres/paymentstore/events.go disagree; a published schema never changes, so a new wire form is a new data version with a schema of its own\n%s", err, got)
				}
			})
		})
	}
}

// TestPublishedEventsAreCloudEvents parses every published event with the
// CloudEvents SDK, which must find it valid CloudEvents 1.0 and read its
// attributes as the encoder meant them.
func TestPublishedEventsAreCloudEvents(t *testing.T) {
	all := samples(t)
	for _, typ := range slices.Sorted(maps.Keys(wireForms)) {
		t.Run(typ, func(t *testing.T) {
			forEachTraceContext(t, func(t *testing.T, tc traceContext) {
				got := encodeSample(t, all, typ, tc)
				var e cloudevents.Event
				if err := json.Unmarshal(got, &e); err != nil {
					t.Fatalf("the CloudEvents SDK cannot read it: %v\n%s", err, got)
				}
				if err := e.Validate(); err != nil {
					t.Errorf("not valid CloudEvents: %v\n%s", err, got)
				}
				version := wireForms[typ].dataVersion
				s := all[typ]
				if e.SpecVersion() != "1.0" || e.ID() != s.messageID || e.Type() != typ || e.Source() != eventSource ||
					e.Subject() != string(s.event.AggregateID()) || !e.Time().Equal(s.event.OccurredAt().Truncate(time.Millisecond)) ||
					e.DataContentType() != "application/json" || e.DataSchema() != api.EventSchemaID(typ, version) {
					t.Errorf("the SDK reads specversion %s id %s type %s source %s subject %s time %s datacontenttype %s dataschema %s",
						e.SpecVersion(), e.ID(), e.Type(), e.Source(), e.Subject(), e.Time(), e.DataContentType(), e.DataSchema())
				}
				if got := e.Extensions()["dataversion"]; got != version {
					t.Errorf("the extension dataversion: got %v, want %q", got, version)
				}
				for name, want := range map[string]string{"traceparent": tc.parent, "tracestate": tc.state} {
					if got, ok := e.Extensions()[name]; (want == "" && ok) || (want != "" && got != want) {
						t.Errorf("the extension %s: got %v, want %q", name, got, want)
					}
				}
				var data map[string]any
				if err := e.DataAs(&data); err != nil || len(data) == 0 {
					t.Errorf("data: %v %v", data, err)
				}
			})
		})
	}
}

// forEachTraceContext runs f for an event recorded by a write that was not
// traced and for one that was: the distributed-tracing extension attributes
// must keep the event valid.
func forEachTraceContext(t *testing.T, f func(*testing.T, traceContext)) {
	for name, tc := range map[string]traceContext{
		"untraced": {},
		"traced":   {parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", state: "vendor=opaque"},
	} {
		t.Run(name, func(t *testing.T) { f(t, tc) })
	}
}

func encodeSample(t *testing.T, all map[string]sample, typ string, tc traceContext) []byte {
	t.Helper()
	s, ok := all[typ]
	if !ok {
		t.Fatalf("no sample of %q: add one to samples in adapters/postgres/paymentstore/events_test.go", typ)
	}
	got, err := encodeEvent(s.messageID, s.event, tc)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
