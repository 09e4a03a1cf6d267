// Package apiclients holds a Go client of each HTTP API — payments, ledger,
// webhooks — generated from its OpenAPI document with the command
// docs/CONTRACTS.md gives a client's team, so that the promise "a client
// generates from the document" is code that compiles and runs, not prose.
// TestClientsAreGenerated holds each file to what the pinned generator makes
// of the document today; TestGeneratedClientsReadLiveAnswers
// (tools/walkthrough) sends every operation through them to the running
// services and requires each answer to decode into the generated types.
//
// After changing a document, regenerate (this needs the Go module proxy):
//
//	go -C tools generate ./apiclients
package apiclients

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -generate types,client -package paymentsclient -o paymentsclient/client.gen.go ../../api/payments.openapi.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -generate types,client -package ledgerclient -o ledgerclient/client.gen.go ../../api/ledger.openapi.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -generate types,client -package webhooksclient -o webhooksclient/client.gen.go ../../api/webhooks.openapi.yaml
