package inbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Handler is the one thing a consumer of the events writes: which event
// types it applies and what applying one writes. The inbox does the rest,
// the same for every consumer — decode and identify the message, refuse
// poison before anything is written, record it (applied at once in the sync
// mode, pending in the async one), absorb redeliveries, keep the types the
// consumer does not know, retry with backoff and park what can never apply.
//
// R is the consumer's repositories bound to one transaction of its database,
// the one that writes the message's inbox row (the ledger's: its ledger
// tables; the webhooks service's: its deliveries); E is an event checked and
// ready to apply (the ledger's: the transaction it posts; the webhooks
// service's: the event and whose endpoints it goes to).
type Handler[R, E any] interface {
	// Types maps each event type the consumer applies to the versions of
	// its data it decodes. The inbox claims and applies only these types; a
	// message of any other type is recorded, unapplied, for a version that
	// applies it. An event of one of these types at another data version is
	// refused as invalid before any schema is asked.
	Types() map[string][]string
	// Ignored maps each event type the consumer deliberately never applies
	// to the reason the inbox records on its row, which is then done: a
	// decision, not a gap waiting for a version that applies it.
	Ignored() map[string]string
	// Check turns ev, whose data is at version, into what Apply applies,
	// before anything is written. The inbox has checked the envelope, the
	// version, the event's time and data and ev against its schemas. An
	// error means the event can never apply: the inbox wraps it in
	// ErrInvalidEvent, writes nothing, and leaves the message for the DLQ.
	Check(ev Event, version string) (E, error)
	// Compare orders the events of one claimed batch, which the processor
	// applies in one transaction: in this order, batches committing side by
	// side take the rows they share in the same order and never deadlock.
	// It returns 0 when the order does not matter.
	Compare(a, b E) int
	// Apply writes e with repos, the consumer's repositories inside the
	// transaction that records or settles the message's inbox row: the row
	// and what Apply writes commit together or not at all. at is when the
	// inbox applies it, the time it records on the row. It reports false,
	// having written nothing, when e's effect is already there under another
	// message id (the consumer's own business key: the second layer of
	// idempotency). An error rolls back Apply's writes; whether the message
	// is retried or parked follows from it (ErrPermanent).
	Apply(ctx context.Context, repos R, e E, at time.Time) (bool, error)
}

// errNotApplied marks, beside ErrInvalidEvent, an event of a type the
// handler does not apply. The sync path alone refuses it like any event it
// cannot apply; the inbox as NewService builds it records it instead
// (unhandled.go).
var errNotApplied = errors.New("not a type this consumer applies")

// checker is a handler with what the inbox derives from it once, shared by
// the sync path, the async mode's receive and the processor, so that a
// message is checked by the same rules wherever it is applied: the types it
// applies, the versions of each, and the schemas every applied event is
// checked against.
type checker[R, E any] struct {
	h        Handler[R, E]
	schemas  Schemas
	types    []string            // the applied types, sorted
	versions map[string][]string // by applied type, sorted
}

func newChecker[R, E any](h Handler[R, E], schemas Schemas) *checker[R, E] {
	c := &checker[R, E]{h: h, schemas: schemas, versions: map[string][]string{}}
	for typ, vs := range h.Types() {
		c.versions[typ] = slices.Sorted(slices.Values(vs))
	}
	c.types = slices.Sorted(maps.Keys(c.versions))
	return c
}

// check turns ev into what its handler applies: its type must be one the
// handler applies (else the error wraps errNotApplied too), its data version
// one the handler decodes; the schemas must accept it, it must have its time
// and data, and the handler's own Check must pass. Errors wrap
// ErrInvalidEvent.
func (c *checker[R, E]) check(ev Event) (E, error) {
	var none E
	if _, ok := c.versions[ev.Type]; !ok {
		return none, fmt.Errorf("%w: %w: %s", ErrInvalidEvent, errNotApplied, ev.Type)
	}
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
