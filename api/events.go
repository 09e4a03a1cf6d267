package api

import "embed"

// Events holds the contract of the events the payments service publishes:
// events.asyncapi.yaml, the AsyncAPI 3.0 document of the topic and of one
// subscription to it, the ledger's queue and DLQ; and under events/ the
// JSON Schemas (2020-12) of the CloudEvents envelope,
// events/envelope/v1.json, and of each event type's data at each version
// ever published, events/<type>/v<N>.json, with events/published.sha256,
// the hashes that keep a published schema from changing. The producer's
// tests validate every event it publishes against these files, and each
// consumer every event it receives: the services share these files, not Go
// code.
//
//go:embed events.asyncapi.yaml events
var Events embed.FS

// AsyncAPIFile is the AsyncAPI document's name in Events.
const AsyncAPIFile = "events.asyncapi.yaml"

// EventSchemaBase starts the $id of every schema in Events, and so the
// dataschema of every event: the schema of file events/<path> has the $id
// EventSchemaBase + <path>. The host is in the .example domain, reserved
// for documentation, so the ids name the schemas without pretending to
// serve them; scripts/fork.sh gives a fork a base of its own. The consumers
// read it here; the producer writes the same value in its own contract
// (application/payments/events.go), since the application imports no
// package outside it, and TestPublishedEventsMatchTheirSchemas fails if the
// two differ.
const EventSchemaBase = "https://payments-outbox.example/schemas/events/"

// EventSchemaID returns the $id of the schema of typ's data at version: the
// dataschema an event of that type and version is published with.
func EventSchemaID(typ, version string) string {
	return EventSchemaBase + typ + "/v" + version + ".json"
}

// EnvelopeSchemaID is the $id of the CloudEvents envelope's schema.
const EnvelopeSchemaID = EventSchemaBase + "envelope/v1.json"
