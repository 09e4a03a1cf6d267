package inbox

// Schemas checks a received event against the JSON Schemas it is published
// under (api/events): the CloudEvents envelope's, and that of its type's data
// at its version. The payments service's tests check every event it publishes
// against the same files, so producer and consumers share a contract, not code.
// adapters/eventschema implements it.
//
// The inbox checks each event of a type its handler applies before touching
// the database, in the Service and the Processor alike: an event that breaks
// its schema is refused with ErrInvalidEvent, left for the DLQ like any event
// the consumer cannot apply. An event of a type the handler does not apply is
// not checked: it is recorded and acknowledged, so a producer can ship a new
// type before any schema of it reaches here.
type Schemas interface {
	// Validate checks event, a whole CloudEvents document of type typ whose
	// data is at version, and returns an error saying what breaks which
	// schema, or that no schema describes typ at version.
	Validate(typ, version string, event []byte) error
}
