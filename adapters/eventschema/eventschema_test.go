package eventschema_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
)

// eventsDir holds one document per event type and data version ever
// published, byte for byte (the payments service's tests keep them).
const eventsDir = "../../docs/events"

func newValidator(t *testing.T) *eventschema.Validator {
	t.Helper()
	v, err := eventschema.New()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestEveryPublishedVersionHasItsSchemaAndDocument: each document in
// docs/events matches the schema it names, which is the file of its type and
// version; and each data schema in api/events has its document. A version
// ever published keeps both, so consumers can still check what they receive.
func TestEveryPublishedVersionHasItsSchemaAndDocument(t *testing.T) {
	v := newValidator(t)
	docs, err := filepath.Glob(filepath.Join(eventsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no documents in docs/events")
	}
	named := regexp.MustCompile(`^(.+)\.v([1-9][0-9]*)\.json$`)
	documented := map[string]bool{} // "<type>/v<N>.json"
	for _, path := range docs {
		base := filepath.Base(path)
		m := named.FindStringSubmatch(base)
		if m == nil {
			t.Errorf("docs/events/%s: name it <type>.v<N>.json", base)
			continue
		}
		documented[m[1]+"/v"+m[2]+".json"] = true
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Check(body); err != nil {
			t.Errorf("docs/events/%s: %v", base, err)
		}
		if err := v.Validate(m[1], m[2], body); err != nil {
			t.Errorf("docs/events/%s is not %s version %s: %v", base, m[1], m[2], err)
		}
	}
	schemas, err := filepath.Glob("../../api/events/*/v*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range schemas {
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../../api/events/"))
		if !strings.HasPrefix(rel, "envelope/") && !documented[rel] {
			t.Errorf("api/events/%s has no document in docs/events: publish one (go test ./application/payments -run TestWireFormIsStable -update)", rel)
		}
	}
}

// golden is the published payment.created document, compacted.
func golden(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(eventsDir, "payment.created.v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), "")
}

func TestValidate(t *testing.T) {
	v := newValidator(t)
	good := golden(t)
	const schema = `"dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json",`
	edit := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("the document has no %s", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	tests := []struct {
		name    string
		body    string
		version string
		wantErr string // "" for valid
	}{
		{"as published", good, "1", ""},
		{"with an extension attribute", edit(`"specversion"`, `"traceparent":"00-abc-def-01","specversion"`), "1", ""},
		{"an unknown field in data", edit(`"merchant_id":"mer_1"`, `"merchant_id":"mer_1","note":"x"`), "1", "note"},
		{"a lower-case currency", edit(`"BRL"`, `"brl"`), "1", "/data/currency"},
		{"a zero amount", edit(`"amount":1050`, `"amount":0`), "1", "/data/amount"},
		{"a fractional amount", edit(`"amount":1050`, `"amount":10.5`), "1", "/data/amount"},
		{"no payer", edit(`"payer_id":"cus_1",`, ``), "1", "payer_id"},
		{"a payment id that is no UUID", edit(`"payment_id":"01a229b5-9214-7c6f-9233-89c89831c3f4"`, `"payment_id":"42"`), "1", "/data/payment_id"},
		{"a payer with a control character", edit(`"cus_1"`, `"cus\u00071"`), "1", "/data/payer_id"},
		{"no source", edit(`"source":"/payments",`, ``), "1", "source"},
		{"no time", edit(`"time":"2026-11-29T23:48:14.996Z",`, ``), "1", "time"},
		{"a time that is not RFC 3339", edit(`2026-11-29T23:48:14.996Z`, `yesterday`), "1", "/time"},
		{"an id that is no UUID", edit(`"id":"01a229b5-9214-7c86-a93e-5a5736b23efd"`, `"id":"42"`), "1", "/id"},
		{"another specversion", edit(`"specversion":"1.0"`, `"specversion":"0.3"`), "1", "/specversion"},
		{"another content type", edit(`"application/json"`, `"text/plain"`), "1", "/datacontenttype"},
		{"data that is no object", edit(`"data":{`, `"data":[],"x":{`), "1", "/data"},
		{"an extension attribute that is an object", edit(`"specversion"`, `"trace":{},"specversion"`), "1", "/trace"},
		{"an attribute name CloudEvents does not allow", edit(`"specversion"`, `"Trace_Parent":"x","specversion"`), "1", "Trace_Parent"},
		{"no dataschema", edit(schema, ``), "1", "dataschema"},
		{"the dataschema of another version", edit(`/v1.json`, `/v2.json`), "1", "is not the schema of payment.created data version 1"},
		{"a version with no schema", good, "2", "no schema"},
		{"not JSON", `{"specversion":`, "1", "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Validate("payment.created", tt.version, []byte(tt.body))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want valid:\n%s", err, tt.body)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error naming %q:\n%s", err, tt.wantErr, tt.body)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Errorf("the error spans lines, but it goes into one log line: %q", err)
			}
		})
	}
	if err := v.Validate("payment.created", "2", []byte(good)); !errors.Is(err, eventschema.ErrNoSchema) {
		t.Errorf("a version with no schema: got %v, want ErrNoSchema", err)
	}
}

// TestCheck: a published event must name its schema, and the schema of its
// own type and version.
func TestCheck(t *testing.T) {
	v := newValidator(t)
	good := golden(t)
	tests := []struct{ name, body, wantErr string }{
		{"as published", good, ""},
		{"no dataschema", strings.Replace(good, `"dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json",`, "", 1), "dataschema"},
		{"a schema that does not exist", strings.Replace(good, `/v1.json`, `/v7.json`, 1), "names no file"},
		{"another type's schema", strings.Replace(good, `payment.created/v1.json`, `payment.refunded/v1.json`, 1), "names the schema of payment.refunded"},
		{"data that breaks the schema", strings.Replace(good, `"BRL"`, `"brl"`, 1), "/data/currency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Check([]byte(tt.body))
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
}
