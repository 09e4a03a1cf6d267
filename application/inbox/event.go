package inbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

var (
	// ErrMalformed means the message is not a CloudEvents 1.0 JSON document
	// the inbox can identify (no usable id), or is one of a type this
	// version does not apply that is too large to keep (MaxUnhandledSize). It
	// is never acknowledged, so the queue's redrive policy moves it to the DLQ.
	ErrMalformed = errors.New("malformed message")
	// ErrInvalidEvent means an event of a type the consumer applies carries
	// data it cannot apply (missing fields, a bad amount, an unknown data
	// version, data its schema refuses). Like ErrMalformed it is left for the
	// DLQ, where an operator can look at it and redrive it once a fixed
	// consumer is deployed.
	ErrInvalidEvent = errors.New("invalid event")
)

// MaxTypeLen bounds an event's type: far above any type a producer names
// (payment.created), and short enough that a type is logged whole. A
// message with a longer one is malformed.
const MaxTypeLen = 128

// clip shortens what a message carried for an error's text, which is
// logged: a field of a forged message could be most of its 256 KiB.
func clip(s string) string {
	if len(s) > 64 {
		return strings.ToValidUTF8(s[:64], "") + "…"
	}
	return s
}

// Event is a message body decoded as a CloudEvent and identified: the one
// place where bytes from the broker become an event. The consumer's
// receive, the processor's claim and the tracing of the processor's work
// all read this, never the body again. Decode builds it.
type Event struct {
	ID      string    // the CloudEvent id, as a canonical lower-case UUID
	Type    string    // the CloudEvent type, e.g. payment.created
	Subject string    // what the event is about (a payment id); "" when absent
	Time    time.Time // when the fact happened; zero when absent or not RFC 3339
	Data    []byte    // the data member, raw JSON; empty when absent
	// TraceParent and TraceState are the event's CloudEvents
	// distributed-tracing extension: the trace context of the write that
	// recorded the fact, "" when the event carries none.
	TraceParent string
	TraceState  string
	// Body is the message exactly as received: what the inbox keeps and
	// what the schemas check.
	Body []byte

	rawTime    string // Time as the event wrote it, for the error that refuses it
	dataSchema string
}

// wireEvent is this consumer's own view of the CloudEvents 1.0 envelope. It
// is deliberately not the producer's struct: the services share a wire
// contract (api/events), not code.
type wireEvent struct {
	SpecVersion string          `json:"specversion"`
	ID          string          `json:"id"`
	Type        string          `json:"type"`
	Subject     string          `json:"subject"`
	Time        string          `json:"time"`
	DataSchema  string          `json:"dataschema"`
	Data        json.RawMessage `json:"data"`
	TraceParent string          `json:"traceparent"`
	TraceState  string          `json:"tracestate"`
}

// Decode parses body as a CloudEvent and checks what every event needs,
// whatever its type: spec version 1.0, a UUID id and a type. Errors wrap
// ErrMalformed.
func Decode(body []byte) (Event, error) {
	// The inbox keeps the body as jsonb, which refuses what encoding/json
	// lets through: invalid UTF-8 and the NUL character. Refuse them here, so
	// such a message is poison (DLQ) rather than a database error retried.
	if !utf8.Valid(body) {
		return Event{}, fmt.Errorf("%w: body is not valid UTF-8", ErrMalformed)
	}
	if hasNULEscape(body) {
		return Event{}, fmt.Errorf("%w: body contains a NUL character", ErrMalformed)
	}
	var w wireEvent
	if err := json.Unmarshal(body, &w); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if w.SpecVersion == "" && w.Type == "Notification" {
		// encoding/json matches field names case-insensitively, so SNS's
		// "Type" lands in w.Type: the classic misconfiguration.
		return Event{}, fmt.Errorf("%w: an SNS envelope, not a CloudEvent: the subscription needs RawMessageDelivery=true", ErrMalformed)
	}
	if w.SpecVersion != "1.0" {
		return Event{}, fmt.Errorf("%w: specversion %q, want 1.0", ErrMalformed, clip(w.SpecVersion))
	}
	id, err := uuid.Parse(w.ID)
	if err != nil {
		return Event{}, fmt.Errorf("%w: id %q is not a UUID", ErrMalformed, clip(w.ID))
	}
	if w.Type == "" {
		return Event{}, fmt.Errorf("%w: no type", ErrMalformed)
	}
	if len(w.Type) > MaxTypeLen {
		return Event{}, fmt.Errorf("%w: a type of %d bytes (%q), longer than any event type (at most %d)", ErrMalformed, len(w.Type), clip(w.Type), MaxTypeLen)
	}
	ev := Event{
		ID: id.String(), Type: w.Type, Subject: w.Subject, Data: w.Data,
		TraceParent: w.TraceParent, TraceState: w.TraceState, Body: body,
		rawTime: w.Time, dataSchema: w.DataSchema,
	}
	if w.Time != "" {
		if t, err := time.Parse(time.RFC3339Nano, w.Time); err == nil {
			ev.Time = t
		}
	}
	return ev, nil
}

// TraceID is the trace id of the event's trace context: the second field of
// its W3C traceparent ("00-<trace id>-<parent id>-<flags>"), 32 lower-case
// hex digits, or "" when the event carries none or a malformed one. It is
// read here, from the event, so that the inbox row keeps it whether or not
// this consumer traces (adapters/tracing's test holds it to OpenTelemetry's
// own parsing).
func (e Event) TraceID() string {
	tp := e.TraceParent
	// version-traceid-parentid-flags: 2+1+32+1+16+1+2 characters; a later
	// version may append fields after another '-'.
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' || len(tp) > 55 && (tp[:2] == "00" || tp[55] != '-') {
		return ""
	}
	version, id, parent, flags := tp[:2], tp[3:35], tp[36:52], tp[53:55]
	if !lowerHex(version) || version == "ff" || !lowerHex(id) || !lowerHex(parent) || !lowerHex(flags) ||
		strings.Trim(id, "0") == "" || strings.Trim(parent, "0") == "" {
		return ""
	}
	return id
}

// lowerHex reports whether s is lower-case hexadecimal digits only, as the
// W3C trace context writes its fields.
func lowerHex(s string) bool {
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Version is the version of the event's data: the one its dataschema names
// (…/<type>/v<N>.json, docs/CONTRACTS.md "Events").
func (e Event) Version() (string, error) {
	if e.dataSchema == "" {
		return "", errors.New("no dataschema names the version of its data")
	}
	prefix := "/" + e.Type + "/v"
	i := strings.LastIndex(e.dataSchema, prefix)
	version, ok := "", false
	if i >= 0 {
		version, ok = strings.CutSuffix(e.dataSchema[i+len(prefix):], ".json")
	}
	if !ok || version == "" || strings.Trim(version, "0123456789") != "" {
		return "", fmt.Errorf("dataschema %q does not name a version of %s's data (…/%s/v<N>.json)", clip(e.dataSchema), e.Type, e.Type)
	}
	return version, nil
}

// hasNULEscape reports whether a JSON document contains the escape \u0000
// (and not merely an escaped backslash followed by "u0000").
func hasNULEscape(body []byte) bool {
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte(`u0000`))
		if j < 0 {
			return false
		}
		k := i + j // index of 'u'
		slashes := 0
		for k-1-slashes >= 0 && body[k-1-slashes] == '\\' {
			slashes++
		}
		if slashes%2 == 1 {
			return true
		}
		i = k + 1
	}
}
