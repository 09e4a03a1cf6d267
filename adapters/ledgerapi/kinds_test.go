package ledgerapi_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/application/bookkeeping"
)

// TestDocumentedKindsAreTheRegistrys ties the second list of kinds, the
// enum of LedgerTransaction.kind in api/ledger.openapi.yaml, to the one the
// code posts by (the registry in application/bookkeeping/events.go: the
// kinds that post a transaction, PostedKinds): a kind
// the registry gained but the document lacks makes every client generated
// from it reject the ledger's answers, and a kind only the document has is a
// promise nothing keeps. Each kind is also explained in the field's
// description, so a client learns what money it moves.
func TestDocumentedKindsAreTheRegistrys(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(apidoc.Ledger())
	if err != nil {
		t.Fatal(err)
	}
	tx := doc.Components.Schemas["LedgerTransaction"]
	if tx == nil || tx.Value.Properties["kind"] == nil {
		t.Fatalf("%s has no schema LedgerTransaction with a property kind; the test is not looking where it should", apidoc.LedgerFile)
	}
	kind := tx.Value.Properties["kind"].Value
	var documented []string
	for _, v := range kind.Enum {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("LedgerTransaction.kind's enum holds %v, not a string", v)
		}
		documented = append(documented, s)
	}
	var registered []string
	for _, k := range bookkeeping.PostedKinds() {
		registered = append(registered, string(k))
	}
	if len(registered) == 0 {
		t.Fatal("the registry posts no kind; the test is not looking where it should")
	}
	for _, k := range registered {
		if !slices.Contains(documented, k) {
			t.Errorf("the ledger posts facts of kind %q but %s's LedgerTransaction.kind does not list it: add it to the enum, and say in the description what money it moves", k, apidoc.LedgerFile)
		}
		if !strings.Contains(kind.Description, "`"+k+"`") {
			t.Errorf("LedgerTransaction.kind's description in %s does not explain the kind `%s`", apidoc.LedgerFile, k)
		}
	}
	for _, k := range documented {
		if !slices.Contains(registered, k) {
			t.Errorf("%s's LedgerTransaction.kind lists %q, which no event type of the registry (application/bookkeeping/events.go) posts", apidoc.LedgerFile, k)
		}
	}
}
