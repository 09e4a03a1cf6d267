package ledgerstore_test

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
)

// schemas returns the published events' schemas, which the ledger checks
// every event it posts against, as cmd/ledger wires them.
func schemas(t testing.TB) *eventschema.Validator {
	t.Helper()
	v, err := eventschema.New()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
