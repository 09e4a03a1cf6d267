package ledgers

import (
	"os"
	"path/filepath"
	"testing"
)

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
				t.Errorf("the registry in application/ledgers/events.go decodes %s data version %s, which has no schema: %v", typ, version, err)
			}
		}
	}
}
