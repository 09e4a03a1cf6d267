package payments

// DataVersion returns the data version the producer registry publishes typ
// at, and whether typ has an entry: what the registry's tests read.
func DataVersion(typ string) (string, bool) {
	form, ok := wireForms[typ]
	return form.dataVersion, ok
}

// RegisteredEventTypes returns every event type the producer registry has an
// entry for.
func RegisteredEventTypes() []string {
	types := make([]string, 0, len(wireForms))
	for typ := range wireForms {
		types = append(types, typ)
	}
	return types
}

// NotFingerprinted reports whether field of a request is left out of its
// fingerprint: what the fingerprint's tests skip.
func NotFingerprinted(field string) bool { return notFingerprinted[field] }
