// Package webhooks is the webhooks service's application: the merchant's
// webhook endpoints, the fan-out of each payments event into one delivery per
// subscribed endpoint (the inbox Handler, applied by the shared inbox in its
// async mode), and the delivery of each one signed by the Standard Webhooks
// specification, retried on its schedule, until it is delivered, the
// endpoint is disabled, or the schedule is spent and it is parked.
//
// This file is the contract between the use cases and the merchant API
// (adapters/webhooksapi): the inputs, the answers and the errors. Nothing
// here knows about HTTP or SQL.
package webhooks

import (
	"errors"
	"time"

	"github.com/payments-outbox/payments-outbox/application/access"
)

// The size of a page of a list, as the payments list's.
const (
	DefaultListLimit = 10
	MaxListLimit     = 100
)

// AllEvents alone in EnabledEvents subscribes an endpoint to every event
// type, the ones added later included.
const AllEvents = "*"

// Errors of the use cases, matched with errors.Is. None holds a secret.
var (
	// ErrInvalidEndpoint means a new endpoint breaks a rule (its URL's
	// scheme or address, an unknown event type, no events); the text says
	// which.
	ErrInvalidEndpoint = errors.New("invalid webhook endpoint")
	// ErrInvalidListQuery means a parameter of a list breaks a rule.
	ErrInvalidListQuery = errors.New("invalid list query")
	// ErrUnknownCursor means a cursor names nothing of the list.
	ErrUnknownCursor = errors.New("the cursor names nothing of this list")
	// ErrEndpointNotFound means no endpoint has the id, or it is another
	// merchant's: the two are not told apart.
	ErrEndpointNotFound = errors.New("webhook endpoint not found")
	// ErrEventNotFound means the endpoint was never sent the event.
	ErrEventNotFound = errors.New("no delivery of this event to this endpoint")
	// ErrEndpointDeleted means the endpoint was deleted: it takes no action.
	ErrEndpointDeleted = errors.New("webhook endpoint deleted")
	// ErrEndpointDisabled means the endpoint was disabled (a 410 Gone, or
	// failing for too long): it is sent nothing, redeliveries included.
	ErrEndpointDisabled = errors.New("webhook endpoint disabled")
	// ErrTooManyEndpoints means the merchant has as many endpoints as it
	// may (Config.MaxEndpoints): one must be deleted first.
	ErrTooManyEndpoints = errors.New("the merchant has as many webhook endpoints as it may")
	// ErrInvalidRecover means a parameter of a recovery breaks a rule; the
	// text says which.
	ErrInvalidRecover = errors.New("invalid recovery")
)

// EndpointStatus is whether an endpoint is sent events.
type EndpointStatus string

const (
	Enabled  EndpointStatus = "enabled"
	Disabled EndpointStatus = "disabled" // by a 410 Gone or by failing for too long
)

// Endpoint is a merchant's webhook endpoint, as its API shows it: never
// with its secret, which only CreateEndpoint's and RotateSecret's answers
// carry, once.
type Endpoint struct {
	ID             string
	MerchantID     string
	URL            string
	Description    string
	EnabledEvents  []string
	Status         EndpointStatus
	DisabledReason string // why it is disabled; "" while enabled
	CreatedAt      time.Time
	DeletedAt      time.Time // zero unless deleted
}

// Secret is a signing secret in the Standard Webhooks form: "whsec_" and
// the base64 of its bytes.
type Secret string

// CreateEndpoint is the input of Create.
type CreateEndpoint struct {
	Principal access.Principal
	// MerchantID is the platform's choice of merchant; a merchant's key
	// leaves it empty (its own) or names itself.
	MerchantID     string
	URL            string
	Description    string
	EnabledEvents  []string
	IdempotencyKey string // "" when the request has none
}

// Created is the answer of Create and RotateSecret: the endpoint and the
// secret it signs with from now on, shown this once.
type Created struct {
	Endpoint Endpoint
	// Secret is "" in a replay: a secret is shown once, and a client that
	// lost that answer rotates the secret to get a new one.
	Secret Secret
	// Replayed is true when the answer is a replay of the first request
	// with the same Idempotency-Key: the endpoint it created, as it is now.
	Replayed bool
}

// ListEndpoints is the input of List: a merchant's endpoints, newest first,
// keyset-paginated as the payments list (StartingAfter, EndingBefore: ids
// of endpoints of the list).
type ListEndpoints struct {
	Principal     access.Principal
	MerchantID    string
	Limit         int
	StartingAfter string
	EndingBefore  string
}

// EndpointPage is one page of endpoints.
type EndpointPage struct {
	Endpoints []Endpoint
	HasMore   bool
}

// Outcome is how an attempt ended.
type Outcome string

const (
	Delivered Outcome = "delivered" // a 2xx answer
	Failed    Outcome = "failed"    // another answer, a timeout or a connection error: retried on the schedule
	Gone      Outcome = "gone"      // 410 Gone: the endpoint is disabled
	Refused   Outcome = "refused"   // not sent: the address dialled is not allowed
)

// Attempt is one try to deliver one event to one endpoint.
type Attempt struct {
	ID          string
	EndpointID  string
	EventID     string
	EventType   string
	AttemptedAt time.Time
	StatusCode  int // 0 when no answer came
	Latency     time.Duration
	Error       string // "" when delivered; never a secret, never the receiver's whole body
	Outcome     Outcome
}

// ListAttempts is the input of Attempts: an endpoint's attempts, newest
// first, keyset-paginated by attempt id.
type ListAttempts struct {
	Principal     access.Principal
	EndpointID    string
	Limit         int
	StartingAfter string
	EndingBefore  string
}

// AttemptPage is one page of attempts.
type AttemptPage struct {
	Attempts []Attempt
	HasMore  bool
}

// RotateSecret is the input of RotateSecret: the endpoint gets a new
// secret, and the current one keeps signing beside it for ExpireCurrentIn
// (0: the configured grace period).
type RotateSecret struct {
	Principal       access.Principal
	EndpointID      string
	ExpireCurrentIn time.Duration
}

// Redeliver is the input of Redeliver: one more attempt of an event the
// endpoint was sent (delivered, retrying or parked), due now.
type Redeliver struct {
	Principal  access.Principal
	EndpointID string
	EventID    string
}

// The size of a recovery, per call.
const (
	DefaultRecoverLimit = 100
	MaxRecoverLimit     = 1000
)

// Recover is the input of Recover: one more attempt, due now, of each
// delivery of the endpoint created at or after Since that failed and waits
// for a retry, or is parked; the oldest first, at most Limit of them (0:
// DefaultRecoverLimit), after the delivery of event StartingAfter when the
// previous call's answer had more.
type Recover struct {
	Principal      access.Principal
	EndpointID     string
	Since          time.Time
	Limit          int
	StartingAfter  string // an event id: the previous answer's Last
	IdempotencyKey string // "" when the request has none
}
