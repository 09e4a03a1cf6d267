package api_test

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
	"github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/payments/paymentstest"
)

// The payments service's events against this contract: what its encoder
// (application/payments/events.go) makes of a sample of each event type
// (paymentstest.Samples, one per type the domain declares) must be valid
// CloudEvents matching the schemas here. These checks live beside the files
// rather than beside the encoder because the application's tests may import
// neither a JSON Schema validator nor the CloudEvents SDK.

// TestPublishedEventsMatchTheirSchemas: every event type is published naming
// the schema of its data at its registry version, a file in api/events, and
// matches it and the envelope's schema; the ledger checks what it receives
// against the same files. (TestAsyncAPIDocument gives each schema its
// message in the AsyncAPI document, so a registry entry without a schema
// fails here, and one without a message there.) The dataschema is the $id
// api.EventSchemaID gives, so the producer's copy of the schema base is the
// contract's.
func TestPublishedEventsMatchTheirSchemas(t *testing.T) {
	v, err := eventschema.New()
	if err != nil {
		t.Fatal(err)
	}
	all := paymentstest.Samples()
	for _, typ := range slices.Sorted(maps.Keys(all)) {
		t.Run(typ, func(t *testing.T) {
			forEachTraceContext(t, func(t *testing.T, tc payments.TraceContext) {
				got := encodeSample(t, all, typ, tc)
				var doc struct {
					DataSchema string `json:"dataschema"`
				}
				if err := json.Unmarshal(got, &doc); err != nil {
					t.Fatal(err)
				}
				if want := api.EventSchemaID(typ, dataVersion(t, got)); doc.DataSchema != want {
					t.Errorf("dataschema: got %q, want %q", doc.DataSchema, want)
				}
				if err := v.Check(got); err != nil {
					t.Errorf("%v: the schema in api/events and the wire struct in application/payments/events.go disagree; a published schema never changes, so a new wire form is a new data version with a schema of its own\n%s", err, got)
				}
			})
		})
	}
}

// TestPublishedEventsAreCloudEvents parses every published event with the
// CloudEvents SDK, which must find it valid CloudEvents 1.0 and read its
// attributes as the encoder meant them.
func TestPublishedEventsAreCloudEvents(t *testing.T) {
	all := paymentstest.Samples()
	for _, typ := range slices.Sorted(maps.Keys(all)) {
		t.Run(typ, func(t *testing.T) {
			forEachTraceContext(t, func(t *testing.T, tc payments.TraceContext) {
				got := encodeSample(t, all, typ, tc)
				var e cloudevents.Event
				if err := json.Unmarshal(got, &e); err != nil {
					t.Fatalf("the CloudEvents SDK cannot read it: %v\n%s", err, got)
				}
				if err := e.Validate(); err != nil {
					t.Errorf("not valid CloudEvents: %v\n%s", err, got)
				}
				version := dataVersion(t, got)
				s := all[typ]
				if e.SpecVersion() != "1.0" || e.ID() != s.MessageID || e.Type() != typ || e.Source() != "/payments" ||
					e.Subject() != string(s.Event.AggregateID()) || !e.Time().Equal(s.Event.OccurredAt().Truncate(time.Millisecond)) ||
					e.DataContentType() != "application/json" || e.DataSchema() != api.EventSchemaID(typ, version) {
					t.Errorf("the SDK reads specversion %s id %s type %s source %s subject %s time %s datacontenttype %s dataschema %s",
						e.SpecVersion(), e.ID(), e.Type(), e.Source(), e.Subject(), e.Time(), e.DataContentType(), e.DataSchema())
				}
				for name, want := range map[string]string{"traceparent": tc.Parent, "tracestate": tc.State} {
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
func forEachTraceContext(t *testing.T, f func(*testing.T, payments.TraceContext)) {
	for name, tc := range map[string]payments.TraceContext{
		"untraced": {},
		"traced":   {Parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", State: "vendor=opaque"},
	} {
		t.Run(name, func(t *testing.T) { f(t, tc) })
	}
}

func encodeSample(t *testing.T, all map[string]paymentstest.Sample, typ string, tc payments.TraceContext) []byte {
	t.Helper()
	s := all[typ]
	got, err := payments.EncodeEvent(s.MessageID, s.Event, tc)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// dataVersion is the version an encoded event says its data is at, which
// the producer sets from its registry: the N its dataschema ends with,
// …/v<N>.json. The callers hold the rest of the dataschema to
// api.EventSchemaID, so an id of another base or type fails there.
func dataVersion(t *testing.T, event []byte) string {
	t.Helper()
	var doc struct {
		DataSchema string `json:"dataschema"`
	}
	if err := json.Unmarshal(event, &doc); err != nil {
		t.Fatalf("%v in\n%s", err, event)
	}
	m := dataSchemaVersion.FindStringSubmatch(doc.DataSchema)
	if m == nil {
		t.Fatalf("dataschema %q does not end with /v<N>.json in\n%s", doc.DataSchema, event)
	}
	return m[1]
}

var dataSchemaVersion = regexp.MustCompile(`/v([1-9][0-9]*)\.json$`)
