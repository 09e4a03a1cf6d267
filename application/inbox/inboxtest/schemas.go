package inboxtest

import (
	"sync"

	"github.com/payments-outbox/payments-outbox/application/inbox"
)

var _ inbox.Schemas = (*FakeSchemas)(nil)

// FakeSchemas stands for the published JSON Schemas in unit tests: it accepts
// every event, or refuses every one with Refuse, and records what it was
// asked. Whether the real schemas accept the events the payments service
// publishes is adapters/eventschema's tests' business. It is safe for
// concurrent use.
type FakeSchemas struct {
	// Refuse, when not nil, is the error every Validate returns.
	Refuse error

	mu    sync.Mutex
	asked []string
}

// Validate records "typ/v<version>" and returns Refuse.
func (f *FakeSchemas) Validate(typ, version string, _ []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, typ+"/v"+version)
	return f.Refuse
}

// Asked returns what Validate was asked, "typ/v<version>", in order.
func (f *FakeSchemas) Asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}
