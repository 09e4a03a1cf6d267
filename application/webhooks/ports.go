package webhooks

import (
	"context"
	"time"
)

// The ports of the webhooks service, declared here and implemented in
// Postgres by adapters/postgres/webhookstore and in memory by webhookstest,
// whose contract suite runs against both. The store owns every transaction;
// nothing here sees one.

// Fanout is the inbox handler's repository (the R of inbox.Handler), bound
// to the transaction of the inbox row being applied: what it writes commits
// with the row, or not at all.
type Fanout interface {
	// Enqueue writes one pending delivery of d, due at d.At, for each
	// endpoint of d.MerchantID that is enabled, not deleted and subscribed
	// to d.EventType (or to AllEvents), unless that endpoint already has a
	// delivery of d.EventID (the second layer of idempotency: an event fans
	// out once). Another merchant's endpoints are never written. It returns
	// how many deliveries it wrote.
	Enqueue(ctx context.Context, d NewDelivery) (int, error)
}

// NewDelivery is an event to fan out to a merchant's endpoints.
type NewDelivery struct {
	MerchantID string
	EventID    string
	EventType  string
	Payload    []byte // the event as the inbox holds it: what every attempt signs and sends
	At         time.Time
}

// SealedSecrets are an endpoint's signing secrets as stored: each sealed
// with the Sealer, the endpoint id as associated data. Previous signs
// beside Current until PreviousExpiresAt; nil when there is none.
type SealedSecrets struct {
	Current           []byte
	Previous          []byte
	PreviousExpiresAt time.Time
}

// StoredEndpoint is an endpoint as the store holds it.
type StoredEndpoint struct {
	Endpoint
	Secrets SealedSecrets
	// FailingSince is when its unbroken run of failed attempts began; zero
	// after a success, or before any attempt.
	FailingSince time.Time
}

// IdempotencyKey identifies a client's retries of one Create, scoped to the
// merchant the endpoint is created for; Fingerprint tells a retry from
// another request under the same key.
type IdempotencyKey struct {
	Merchant    string
	Key         string
	Fingerprint string
}

// CreateResult is what Endpoints.Create committed, or found committed.
type CreateResult struct {
	Endpoint StoredEndpoint
	// Answered is the sealed secret the first request was answered with.
	Answered []byte
	Replayed bool
}

// EndpointQuery is what Endpoints.ListEndpoints reads: the endpoints not
// deleted of MerchantID ("" for every merchant's), newest first (created_at,
// then id, both descending), from a keyset position.
type EndpointQuery struct {
	MerchantID    string
	Limit         int
	After, Before *Position
}

// Position is a place in the endpoints' order.
type Position struct {
	CreatedAt time.Time
	ID        string
}

// AttemptQuery is what Endpoints.Attempts reads: an endpoint's attempts,
// newest first (by id, which is time-ordered), after or before an attempt
// id.
type AttemptQuery struct {
	EndpointID    string
	Limit         int
	After, Before string
}

// Endpoints is the merchant API's store.
type Endpoints interface {
	// Create stores e and, with a key, the key and answered (the sealed
	// secret the answer shows), in one transaction. When the key is already
	// stored with the same fingerprint it stores nothing and returns the
	// endpoint as it is now with the secret first answered, Replayed set.
	// Errors: ErrKeyReused (same key, another fingerprint),
	// dependency.ErrUnavailable.
	Create(ctx context.Context, e StoredEndpoint, key *IdempotencyKey, answered []byte) (CreateResult, error)
	// Endpoint returns the endpoint with id, deleted or not. Errors:
	// ErrEndpointNotFound, dependency.ErrUnavailable.
	Endpoint(ctx context.Context, id string) (StoredEndpoint, error)
	// ListEndpoints returns at most q.Limit endpoints of q: those older than
	// q.After, or the q.Limit nearest to q.Before among those newer than
	// it, or the newest. Errors: dependency.ErrUnavailable.
	ListEndpoints(ctx context.Context, q EndpointQuery) ([]StoredEndpoint, error)
	// DeleteEndpoint marks endpoint id deleted at at (once: a second
	// delete changes nothing) and cancels its pending deliveries, in one
	// transaction, and returns it. Errors: ErrEndpointNotFound,
	// dependency.ErrUnavailable.
	DeleteEndpoint(ctx context.Context, id string, at time.Time) (StoredEndpoint, error)
	// RotateSecret makes current the endpoint's secret; the one it replaces
	// becomes the previous one, signing beside it until previousExpires.
	// Errors: ErrEndpointNotFound, ErrEndpointDeleted,
	// dependency.ErrUnavailable.
	RotateSecret(ctx context.Context, id string, current []byte, previousExpires time.Time) (StoredEndpoint, error)
	// Attempts returns at most q.Limit attempts of q, as ListEndpoints
	// pages. Errors: dependency.ErrUnavailable.
	Attempts(ctx context.Context, q AttemptQuery) ([]Attempt, error)
	// Attempt returns the attempt with id of endpoint endpointID, for a
	// cursor. Errors: ErrUnknownCursor, dependency.ErrUnavailable.
	Attempt(ctx context.Context, endpointID, id string) (Attempt, error)
	// Redeliver makes the delivery of eventID to endpointID pending and due
	// at at, whatever its status (delivered, pending, parked). Errors:
	// ErrEventNotFound, dependency.ErrUnavailable.
	Redeliver(ctx context.Context, endpointID, eventID string, at time.Time) error
}

// DeliveryClaim says which deliveries a worker claims.
type DeliveryClaim struct {
	Limit int
	// PerEndpoint caps the deliveries of one endpoint leased at once, the
	// claimed ones included, whoever holds them.
	PerEndpoint int
	At          time.Time // due at or before At, lease passed
	LeaseUntil  time.Time // the lease the claim takes
}

// Claimed is a delivery a worker leased: what it needs to sign and send it.
type Claimed struct {
	ID           int64
	EndpointID   string
	EventID      string
	EventType    string
	Payload      []byte
	Attempts     int // attempts made before this one
	CreatedAt    time.Time
	LeaseUntil   time.Time // the lease's token: Finish and Release name it
	URL          string
	Secrets      SealedSecrets
	FailingSince time.Time
}

// DeliveryStatus is a delivery's state.
type DeliveryStatus string

const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliveryDelivered DeliveryStatus = "delivered"
	DeliveryParked    DeliveryStatus = "parked"   // its schedule spent: waits for a redelivery
	DeliveryCanceled  DeliveryStatus = "canceled" // its endpoint was deleted or disabled
)

// Finish is what an attempt leaves behind.
type Finish struct {
	DeliveryID int64
	LeaseUntil time.Time
	Attempt    Attempt
	// Status is the delivery's next status: pending (NextAttemptAt set),
	// delivered, parked or canceled.
	Status        DeliveryStatus
	NextAttemptAt time.Time
	// Disable, when not "", disables the endpoint with this reason and
	// cancels its pending deliveries.
	Disable string
}

// DeliveryStats is the deliveries' backlog, for the gauges.
type DeliveryStats struct {
	// Pending deliveries of enabled endpoints, due or waiting for a retry.
	Pending int64
	// Parked deliveries: their schedule is spent.
	Parked int64
	// OldestUndelivered is the age of the oldest pending delivery of an
	// enabled endpoint; 0 when none.
	OldestUndelivered time.Duration
	// Endpoints are the endpoints with the oldest pending deliveries, the
	// oldest first, at most the number asked for.
	Endpoints []EndpointLag
}

// EndpointLag is an endpoint's oldest pending delivery's age.
type EndpointLag struct {
	EndpointID        string
	OldestUndelivered time.Duration
}

// Deliveries is the delivery workers' store.
type Deliveries interface {
	// ClaimDeliveries leases up to c.Limit pending deliveries that are due
	// and not leased (or whose lease passed), of enabled endpoints not
	// deleted, the oldest due first, without ever leasing more than
	// c.PerEndpoint of one endpoint at once (leases held by others count),
	// and commits. Errors: dependency.ErrUnavailable.
	ClaimDeliveries(ctx context.Context, c DeliveryClaim) ([]Claimed, error)
	// FinishDelivery records f.Attempt and, if the delivery's lease is still
	// f.LeaseUntil, moves it to f.Status; it sets the endpoint's
	// failing_since (cleared by a delivered attempt, set by the first
	// failure of a run) and, when f.Disable is set, disables the endpoint
	// and cancels its other pending deliveries; one transaction. It
	// reports whether the lease was still held. Errors:
	// dependency.ErrUnavailable.
	FinishDelivery(ctx context.Context, f Finish) (bool, error)
	// ReleaseDelivery gives a lease back unused: the delivery is due again
	// at once, for any worker. A lease no longer held is left alone.
	// Errors: dependency.ErrUnavailable.
	ReleaseDelivery(ctx context.Context, id int64, leaseUntil time.Time) error
	// DeliveryStats counts the backlog as of at, with the top endpoints by
	// age. Errors: dependency.ErrUnavailable.
	DeliveryStats(ctx context.Context, at time.Time, top int) (DeliveryStats, error)
}

// Request is one attempt's HTTP request: a POST of Body to URL.
type Request struct {
	URL     string
	Headers map[string]string
	Body    []byte
}

// Response is how a receiver answered, or why it did not.
type Response struct {
	StatusCode int    // 0 when no answer came
	Excerpt    []byte // the first bytes of the answer's body, for the attempt's error
	Err        error  // no answer: a timeout, a connection refused or reset, a refused address
	Timeout    bool   // Err is the attempt's timeout
	Refused    bool   // Err is the address check's: nothing was sent
}

// Sender sends an attempt (adapters/webhooksender). It follows no
// redirect and returns within ctx's deadline.
type Sender interface {
	Send(ctx context.Context, r Request) Response
}
