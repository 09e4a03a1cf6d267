// Package api holds the machine-readable contracts of the services' HTTP
// APIs: payments.openapi.yaml, ledger.openapi.yaml and webhooks.openapi.yaml,
// OpenAPI 3.1 documents a client generates code from, and ops.openapi.yaml,
// what every service serves on its operational listener. They are embedded so that each service serves
// the very file its tests validate every exchange against (api/apitest), and
// a change to an API that the document does not follow fails those tests.
// The contract of the events the services exchange is here too (Events).
package api

import "embed"

// FS holds the OpenAPI documents, named <service>.openapi.yaml.
//
//go:embed payments.openapi.yaml ledger.openapi.yaml webhooks.openapi.yaml ops.openapi.yaml
var FS embed.FS

// The file names in FS of each service's document.
const (
	PaymentsFile = "payments.openapi.yaml"
	LedgerFile   = "ledger.openapi.yaml"
	WebhooksFile = "webhooks.openapi.yaml"
	OpsFile      = "ops.openapi.yaml"
)

// Payments returns the payments API's document.
func Payments() []byte { return mustRead(PaymentsFile) }

// Ledger returns the ledger API's document.
func Ledger() []byte { return mustRead(LedgerFile) }

// Webhooks returns the webhooks API's document.
func Webhooks() []byte { return mustRead(WebhooksFile) }

// Ops returns the document of every service's operational endpoints.
func Ops() []byte { return mustRead(OpsFile) }

func mustRead(name string) []byte {
	b, err := FS.ReadFile(name)
	if err != nil {
		panic(err) // unreachable: the embed directive names every file, so a build without one fails
	}
	return b
}
