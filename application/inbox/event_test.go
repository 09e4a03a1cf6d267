package inbox_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
)

// TestDecodeKeepsWhatTheEventCarries: one decode gives everything any part
// of the inbox reads, the trace context the processor's work continues
// included, so that nothing parses a body twice.
func TestDecodeKeepsWhatTheEventCarries(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	body := []byte(`{"specversion":"1.0","id":"0B7E2F5E-7C41-4C55-9A57-3A3D0C1F6A01","type":"note.added","source":"/tests",
"subject":"k1","time":"2026-11-29T12:00:00.123Z","dataschema":"https://payments-outbox.example/schemas/events/note.added/v1.json","traceparent":"` + parent + `","tracestate":"k=v","data":{"key":"k1"}}`)
	ev, err := inbox.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 11, 29, 12, 0, 0, 123e6, time.UTC)
	if ev.ID != msgA || ev.Type != typeNoted || ev.Subject != "k1" || !ev.Time.Equal(want) ||
		string(ev.Data) != `{"key":"k1"}` || ev.TraceParent != parent || ev.TraceState != "k=v" || string(ev.Body) != string(body) {
		t.Errorf("got %+v", ev)
	}
	if v, err := ev.Version(); err != nil || v != "1" {
		t.Errorf("version: got %q, %v; want 1", v, err)
	}
}

func TestDecodeRefusesWhatNoEventIs(t *testing.T) {
	for name, body := range map[string]string{
		"not json":                     `{"specversion":`,
		"no id":                        `{"specversion":"1.0","type":"note.added"}`,
		"sns envelope":                 `{"Type":"Notification","MessageId":"x"}`,
		"nul":                          `{"specversion":"1.0","id":"` + msgA + `","type":"t","data":"\u0000"}`,
		"a type of 100,000 characters": `{"specversion":"1.0","id":"` + msgA + `","type":"` + strings.Repeat("t", 100_000) + `"}`,
		"an id of 100,000 characters":  `{"specversion":"1.0","id":"` + strings.Repeat("i", 100_000) + `","type":"t"}`,
		"a specversion of 100,000":     `{"specversion":"` + strings.Repeat("1", 100_000) + `","id":"` + msgA + `","type":"t"}`,
	} {
		_, err := inbox.Decode([]byte(body))
		if !errors.Is(err, inbox.ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
		// The error is logged: what the message carried is in it cut short.
		if err != nil && len(err.Error()) > 300 {
			t.Errorf("%s: an error of %d bytes; a forged field must not be logged whole", name, len(err.Error()))
		}
	}
}

func TestVersion(t *testing.T) {
	const base = "https://payments-outbox.example/schemas/events/"
	tests := []struct {
		name, typ, dataschema string
		want                  string // "" for an error
	}{
		{"version 1", "payment.created", base + "payment.created/v1.json", "1"},
		{"version 12", "payment.created", base + "payment.created/v12.json", "12"},
		{"no dataschema", "payment.created", "", ""},
		{"another type's schema", "payment.created", base + "payment.refunded/v1.json", ""},
		{"no version", "payment.created", base + "payment.created/v.json", ""},
		{"not a number", "payment.created", base + "payment.created/vone.json", ""},
		{"not a JSON file", "payment.created", base + "payment.created/v1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"specversion":"1.0","id":"` + msgA + `","type":"` + tt.typ + `"`
			if tt.dataschema != "" {
				body += `,"dataschema":"` + tt.dataschema + `"`
			}
			body += `}`
			ev, err := inbox.Decode([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ev.Version()
			switch {
			case tt.want == "" && err == nil:
				t.Errorf("got version %q, want an error", got)
			case tt.want != "" && (err != nil || got != tt.want):
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
