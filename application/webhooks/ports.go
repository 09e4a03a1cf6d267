package webhooks

import (
	"context"
	"time"

	"github.com/payments-outbox/payments-outbox/application/idempotency"
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
	// out once). Another merchant's endpoints are never written. Each
	// delivery carries its endpoint's merchant, whose share of the workers
	// it is sent within. It returns how many deliveries it wrote.
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
	// Timeouts is its unbroken run of attempts that got no answer in
	// time; zero after any answer.
	Timeouts int
}

// CreateResult is what Endpoints.Create committed, or found committed.
type CreateResult struct {
	Endpoint StoredEndpoint
	// Replayed is true when the key was stored by an earlier request:
	// Endpoint is that request's endpoint, as it is now.
	Replayed bool
}

// RecoverQuery is what Endpoints.Recover queues: the deliveries of
// EndpointID created at or after Since that failed (pending, with an
// attempt made and the next one scheduled after At) or are parked, the
// oldest first, after the cursor After (an event id; "" for the first),
// at most Limit of them.
type RecoverQuery struct {
	EndpointID string
	Since      time.Time
	After      string
	Limit      int
	At         time.Time // now: the queued deliveries are due from then
}

// Recovery is what Endpoints.Recover did.
type Recovery struct {
	// Queued is how many deliveries it made due.
	Queued int
	// HasMore is true when more deliveries of the query wait after Last.
	HasMore bool
	// Last is the event id of the last delivery queued: the cursor to go
	// on from; "" when none was.
	Last string
	// Replayed is true when the key was stored by an earlier request: the
	// rest is that request's answer.
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
	// Create stores e and, with a key, the key, in one transaction, unless
	// e's merchant already has max endpoints not deleted. When the key is
	// already stored with the same fingerprint it stores nothing and
	// returns the endpoint that request created, as it is now, Replayed
	// set. Creations for one merchant are serialised, so that two at once
	// cannot both take its last place. Errors: ErrTooManyEndpoints, the
	// key's (idempotency.ErrKeyReused: same key, another fingerprint;
	// ErrKeyInFlight: a twin holds it), dependency.ErrUnavailable.
	Create(ctx context.Context, e StoredEndpoint, key *idempotency.Key, max int) (CreateResult, error)
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
	// Recover makes the deliveries of q pending and due from q.At, the
	// oldest first (their due times keep that order), and, with a key,
	// stores the key with the answer, in one transaction. A delivery
	// already due or in flight is not one of q's: queuing it again would
	// change nothing. When the key is already stored with the same
	// fingerprint it changes nothing and returns the first answer,
	// Replayed set. Errors: ErrUnknownCursor (q.After names no delivery
	// of the endpoint), idempotency.ErrKeyReused, ErrKeyInFlight,
	// dependency.ErrUnavailable.
	Recover(ctx context.Context, q RecoverQuery, key *idempotency.Key) (Recovery, error)
}

// DeliveryClaim says which deliveries a worker claims.
type DeliveryClaim struct {
	Limit int
	// PerEndpoint caps the deliveries of one endpoint leased at once, the
	// claimed ones included, whoever holds them; an endpoint whose last
	// attempts timed out (Claimed.Timeouts above zero) has one at most.
	PerEndpoint int
	// PerMerchant caps the deliveries of one merchant's endpoints leased
	// at once, likewise: the merchant's share of the workers, however many
	// endpoints it has and whatever it asked to redeliver.
	PerMerchant int
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
	// Timeouts is the endpoint's run of attempts that got no answer in
	// time: the worker gives it a shorter budget while it lasts.
	Timeouts int
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
	// TimedOut is true when the attempt got no answer within its budget:
	// the endpoint's run of timeouts grows by one. Any answer (a status,
	// whichever) ends the run.
	TimedOut bool
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
	// deleted, and commits. It serves the merchants in turn: the one it
	// served longest ago that has a due delivery and room first, its
	// oldest due deliveries first, then the next merchant, each merchant
	// it leased for moving to the back of the turn. It never leases more
	// than c.PerMerchant of one merchant's deliveries at once, nor more
	// than c.PerEndpoint of one endpoint's (one, while the endpoint's
	// timeouts are above zero); leases held by others count. Its cost
	// does not grow with the backlog. Errors: dependency.ErrUnavailable.
	ClaimDeliveries(ctx context.Context, c DeliveryClaim) ([]Claimed, error)
	// FinishDelivery records f.Attempt and, if the delivery's lease is still
	// f.LeaseUntil, moves it to f.Status; it sets the endpoint's
	// failing_since (cleared by a delivered attempt, set by the first
	// failure of a run) and its timeouts (one more when f.TimedOut, zero
	// when the attempt got an answer, as they were otherwise) and, when
	// f.Disable is set, disables the endpoint and cancels its other
	// pending deliveries; one transaction. It reports whether the lease
	// was still held. Errors: dependency.ErrUnavailable.
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
	// Err is why no answer came, in full: for the operator's log only. It
	// may name addresses, resolvers and DNS answers of the platform's
	// network, which the merchant is never shown.
	Err error
	// Failure is Err's category, what the merchant is shown; "" when an
	// answer came.
	Failure Failure
}

// Failure is why an attempt got no answer, as the merchant sees it: a
// category, never an address, a resolver or a DNS answer.
type Failure string

// The categories of Failure.
const (
	FailureDNS         Failure = "dns"          // the host name did not resolve
	FailureRefused     Failure = "refused"      // the address is not one webhooks may reach: nothing was sent
	FailureTimeout     Failure = "timeout"      // no answer within the attempt's budget
	FailureTLS         Failure = "tls"          // the TLS handshake failed (certificate, protocol)
	FailureConnRefused Failure = "conn_refused" // the receiver refused the connection
	FailureConnReset   Failure = "conn_reset"   // the connection was reset or closed before an answer
	FailureConnection  Failure = "connection"   // another network error before an answer
)

// Sender sends an attempt (adapters/webhooksender). It follows no
// redirect and returns within ctx's deadline.
type Sender interface {
	Send(ctx context.Context, r Request) Response
}
