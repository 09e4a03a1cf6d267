package posting

import (
	"os"
	"path/filepath"
	"testing"
)

// acceptAll stands for the published schemas where a test is about the
// registry: whether the schemas accept the published documents is
// adapters/eventschema's tests' business.
type acceptAll struct{}

func (acceptAll) Validate(string, string, []byte) error { return nil }

// schemasDir holds the published JSON Schemas, events/<type>/v<N>.json.
const schemasDir = "../../api/events"

// TestEveryDecodedVersionHasASchema: the ledger checks every event it posts
// against the schema of its type and version, so a version it decodes without
// a schema file would refuse every such event.
func TestEveryDecodedVersionHasASchema(t *testing.T) {
	for typ, r := range rules {
		for version := range r.decode {
			path := filepath.Join(schemasDir, typ, "v"+version+".json")
			if _, err := os.Stat(path); err != nil {
				t.Errorf("the registry in application/posting/events.go decodes %s data version %s, which has no schema: %v", typ, version, err)
			}
		}
	}
}

func TestDataVersion(t *testing.T) {
	const base = "https://payments-outbox.example/schemas/events/"
	tests := []struct {
		name, typ, dataschema, dataversion string
		want                               string // "" for an error
	}{
		{"dataschema only", "payment.created", base + "payment.created/v1.json", "", "1"},
		{"both, agreeing", "payment.created", base + "payment.created/v12.json", "12", "12"},
		{"dataversion only, from a producer before dataschema", "payment.refunded", "", "2", "2"},
		{"neither", "payment.created", "", "", ""},
		{"both, disagreeing", "payment.created", base + "payment.created/v2.json", "1", ""},
		{"another type's schema", "payment.created", base + "payment.refunded/v1.json", "1", ""},
		{"no version", "payment.created", base + "payment.created/v.json", "", ""},
		{"not a number", "payment.created", base + "payment.created/vone.json", "", ""},
		{"not a JSON file", "payment.created", base + "payment.created/v1", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := envelope{typ: tt.typ, ev: cloudEvent{DataSchema: tt.dataschema, DataVersion: tt.dataversion}}
			got, err := e.dataVersion()
			switch {
			case tt.want == "" && err == nil:
				t.Errorf("got version %q, want an error", got)
			case tt.want != "" && (err != nil || got != tt.want):
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
