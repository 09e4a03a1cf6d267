package ledgerapi_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// TestDocumentedKindsAreTheRegistrys ties the second list of kinds, the
// enum of LedgerTransaction.kind in api/ledger.openapi.yaml, to the one the
// code posts by (the registry in application/ledgers/events.go: the
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
	for _, k := range ledgers.PostedKinds() {
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
			t.Errorf("%s's LedgerTransaction.kind lists %q, which no event type of the registry (application/ledgers/events.go) posts", apidoc.LedgerFile, k)
		}
	}
}

// owner is the pattern of one percent-encoded owner id in an account's name:
// the unreserved characters of RFC 3986 as they are, any other byte as %XX
// in upper-case hex (ledger.AccountID.String).
const owner = `([-A-Za-z0-9._~]|%[0-9A-F]{2})+`

// maxOwnerBytes is the longest owner id, 255 bytes (the ledger refuses a
// longer one), each byte escaped: %XX.
const maxOwnerBytes = 255 * 3

// TestAccountPatternIsTheRoles ties AccountId in api/ledger.openapi.yaml to
// the roles the ledger declares (ledger.Roles): its pattern is each role's
// form (ledger.Role.Form) with every owner an encoded id, its maxLength the
// longest of them, and its description names every form. A role added in
// domain/ledger without its names in the document would have every client
// validating against it reject the new accounts' balances and entries.
func TestAccountPatternIsTheRoles(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(apidoc.Ledger())
	if err != nil {
		t.Fatal(err)
	}
	ref := doc.Components.Schemas["AccountId"]
	if ref == nil || ref.Value.Pattern == "" {
		t.Fatalf("%s has no schema AccountId with a pattern; the test is not looking where it should", apidoc.LedgerFile)
	}
	schema := ref.Value
	placeholder := regexp.MustCompile(`<[a-z_]+>`)
	var alternatives []string
	var longest uint64
	for _, r := range ledger.Roles() {
		form := r.Form()
		alternatives = append(alternatives, placeholder.ReplaceAllString(form, owner))
		owners := uint64(len(placeholder.FindAllString(form, -1)))
		if n := uint64(len(r.String())) + owners*(1+maxOwnerBytes); n > longest {
			longest = n
		}
		if !strings.Contains(schema.Description, "`"+form+"`") {
			t.Errorf("AccountId's description in %s does not explain the role %s (`%s`)", apidoc.LedgerFile, r, form)
		}
	}
	if len(alternatives) < 2 {
		t.Fatalf("ledger.Roles gives %d roles; the test is not looking where it should", len(alternatives))
	}
	if want := "^(" + strings.Join(alternatives, "|") + ")$"; schema.Pattern != want {
		t.Errorf("AccountId's pattern in %s is not the roles the ledger declares (ledger.Roles): got\n  %s\nwant\n  %s", apidoc.LedgerFile, schema.Pattern, want)
	}
	if schema.MaxLength == nil || *schema.MaxLength != longest {
		t.Errorf("AccountId's maxLength in %s: got %v, want %d, the longest name of any role", apidoc.LedgerFile, schema.MaxLength, longest)
	}

	// And the pattern admits every role's accounts, and nothing else.
	pattern := regexp.MustCompile(schema.Pattern)
	ps := ledger.Parties{Merchant: "m:1", Payer: "ü 50%"}
	for _, r := range ledger.Roles() {
		a, err := r.Account(ps)
		if err != nil {
			t.Fatal(err)
		}
		if !pattern.MatchString(a.String()) {
			t.Errorf("the pattern refuses %s, a %s account", a, r)
		}
	}
	for _, name := range []string{"mer_1", "merchant:", "merchant:a:b", "fee:mer_1", "payer:mer_1", "merchant:a%3a"} {
		if pattern.MatchString(name) {
			t.Errorf("the pattern admits %q, no account's name", name)
		}
	}
}
