package inbox

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// consumer is a handler with what the inbox derives from it once, shared by
// the Service and the Processor so that a message is received and applied
// by the same rules: the types it applies, the versions of each, the types
// it ignores, and the schemas every applied event is checked against.
type consumer[R, E any] struct {
	h        Handler[R, E]
	schemas  Schemas
	types    []string            // the applied types, sorted
	versions map[string][]string // by applied type, sorted
	ignored  map[string]string   // reason by ignored type
}

func newConsumer[R, E any](h Handler[R, E], schemas Schemas) *consumer[R, E] {
	c := &consumer[R, E]{h: h, schemas: schemas, versions: map[string][]string{}, ignored: maps.Clone(h.Ignored())}
	for typ, vs := range h.Types() {
		c.versions[typ] = slices.Sorted(slices.Values(vs))
	}
	c.types = slices.Sorted(maps.Keys(c.versions))
	return c
}

// applies reports whether the consumer applies events of type typ.
func (c *consumer[R, E]) applies(typ string) bool {
	_, ok := c.versions[typ]
	return ok
}

// check turns ev, of a type the consumer applies, into what its handler
// applies: its data version must be one the handler decodes, the schemas
// must accept it, it must have its time and data, and the handler's own
// Check must pass. Nothing is written before: an event refused here leaves
// no inbox row, so its redeliveries reach the DLQ instead of passing for
// duplicates. Errors wrap ErrInvalidEvent.
func (c *consumer[R, E]) check(ev Event) (E, error) {
	var none E
	version, err := ev.Version()
	if err != nil {
		return none, fmt.Errorf("%w: %s: %w", ErrInvalidEvent, ev.Type, err)
	}
	if !slices.Contains(c.versions[ev.Type], version) {
		return none, fmt.Errorf("%w: %s data version %q, this consumer knows %s", ErrInvalidEvent, ev.Type, clip(version), strings.Join(c.versions[ev.Type], ", "))
	}
	if err := c.schemas.Validate(ev.Type, version, ev.Body); err != nil {
		return none, fmt.Errorf("%w: %s: %w", ErrInvalidEvent, ev.Type, err)
	}
	if ev.Time.IsZero() {
		return none, fmt.Errorf("%w: time %q is not RFC 3339", ErrInvalidEvent, clip(ev.rawTime))
	}
	if len(bytes.TrimSpace(ev.Data)) == 0 {
		return none, fmt.Errorf("%w: no data", ErrInvalidEvent)
	}
	e, err := c.h.Check(ev, version)
	if err != nil {
		return none, fmt.Errorf("%w: %s: %w", ErrInvalidEvent, ev.Type, err)
	}
	return e, nil
}
