package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
)

// eventTypes is the registry of the events the service delivers: each type
// with the data versions it reads (only data.merchant_id, to find whose
// endpoints to fan out to). Adding a type the payments service publishes is
// one entry here; a test fails naming a published type (api/events) missing
// from it. A merchant subscribes to these types, or to AllEvents.
var eventTypes = map[string][]string{
	"payment.created":    {"1"},
	"payment.authorized": {"1"},
	"payment.captured":   {"1"},
	"payment.canceled":   {"1"},
	"payment.refunded":   {"1"},
}

// EventTypes returns the event types an endpoint may subscribe to, sorted.
func EventTypes() []string { return slices.Sorted(maps.Keys(eventTypes)) }

// Handler is the webhooks service's handler of the shared inbox: it applies
// an event by fanning it out into one pending delivery per enabled,
// subscribed, not deleted endpoint of the event's merchant (data.merchant_id),
// in the transaction of the event's inbox row. No HTTP call runs there: the
// delivery workers send the deliveries afterwards, so a slow receiver never
// holds an inbox row. Its zero value is ready to use.
type Handler struct {
	// MaxAmount is the largest amount an event may carry, in minor units:
	// an event with a larger one is refused by Check and left for the DLQ,
	// its reason logged, and sent to no one. 0 means DefaultMaxAmount.
	MaxAmount int64
}

// DefaultMaxAmount is the webhooks service's limit unless Handler.MaxAmount
// says otherwise: the payments service's and the ledger's default limit,
// 9,999,999,999.99 of a two-decimal currency.
const DefaultMaxAmount int64 = 999_999_999_999

// ErrAmountLimit means an event carries an amount over the limit
// (Handler.MaxAmount). The event is valid by its schema, which allows any
// int64: the limit is the deployment's policy, a check behind the payments
// service's against a forged or mistaken event.
var ErrAmountLimit = errors.New("amount exceeds the webhooks service's limit")

func (h Handler) maxAmount() int64 {
	if h.MaxAmount <= 0 {
		return DefaultMaxAmount
	}
	return h.MaxAmount
}

var _ inbox.Handler[Fanout, Event] = Handler{}

// Event is a checked event, ready to fan out.
type Event struct {
	ID         string
	Type       string
	MerchantID string
	Payload    []byte
}

// Types implements inbox.Handler: the registry.
func (Handler) Types() map[string][]string {
	out := make(map[string][]string, len(eventTypes))
	for t, vs := range eventTypes {
		out[t] = slices.Clone(vs)
	}
	return out
}

// Ignored implements inbox.Handler: every published type is delivered.
func (Handler) Ignored() map[string]string { return nil }

// Check implements inbox.Handler: the event must name its merchant, and
// none of its amounts may exceed MaxAmount. The inbox has checked it
// against its schema.
func (h Handler) Check(ev inbox.Event, _ string) (Event, error) {
	var data struct {
		MerchantID string `json:"merchant_id"`
		// Every amount an event of the registry carries.
		Amount           int64 `json:"amount"`
		AmountAuthorized int64 `json:"amount_authorized"`
		AmountReleased   int64 `json:"amount_released"`
		RefundedAmount   int64 `json:"refunded_amount"`
	}
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		return Event{}, err
	}
	if data.MerchantID == "" {
		return Event{}, errors.New("data.merchant_id is required: it says whose endpoints the event goes to")
	}
	if a := max(data.Amount, data.AmountAuthorized, data.AmountReleased, data.RefundedAmount); a > h.maxAmount() {
		return Event{}, fmt.Errorf("%w: %s carries an amount of %d, over %d", ErrAmountLimit, ev.Type, a, h.maxAmount())
	}
	return Event{ID: ev.ID, Type: ev.Type, MerchantID: data.MerchantID, Payload: ev.Body}, nil
}

// Compare implements inbox.Handler: the fan-outs of a batch share no row
// they write (each delivery is its event's), so their order does not matter.
func (Handler) Compare(Event, Event) int { return 0 }

// Apply implements inbox.Handler: one pending delivery, due now, per
// endpoint of the merchant subscribed to the event. An event fanned out
// before (a redelivery under the same id) writes nothing again: the
// deliveries' unique (endpoint, event) pair absorbs it. An endpoint is sent
// the events fanned out once it exists: those the inbox applies from then
// on, so an event committed just before the endpoint was created but still
// on its way is sent to it too; nothing applied before is.
func (Handler) Apply(ctx context.Context, repos Fanout, e Event, at time.Time) (bool, error) {
	_, err := repos.Enqueue(ctx, NewDelivery{MerchantID: e.MerchantID, EventID: e.ID, EventType: e.Type, Payload: e.Payload, At: at})
	return err == nil, err
}

// Subscribed reports whether an endpoint enabled for events receives
// events of type typ: the rule the stores' fan-out follows.
func Subscribed(events []string, typ string) bool {
	return slices.Contains(events, AllEvents) || slices.Contains(events, typ)
}
