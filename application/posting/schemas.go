package posting

// Schemas checks a received event against the JSON Schemas it is published
// under (api/events): the CloudEvents envelope's, and that of its type's data
// at its version. The payments service's tests check every event it publishes
// against the same files, so the two services share a contract, not code.
// adapters/eventschema implements it.
//
// Apply checks each event of a type the ledger posts before touching the
// database: an event that breaks its schema is refused with ErrInvalidEvent,
// left for the DLQ like any event the ledger cannot post. An event of a type
// the ledger does not post is not checked: it is recorded and acknowledged,
// so a producer can ship a new type before any schema of it reaches here.
type Schemas interface {
	// Validate checks event, a whole CloudEvents document of type typ whose
	// data is at version, and returns an error saying what breaks which
	// schema, or that no schema describes typ at version.
	Validate(typ, version string, event []byte) error
}
