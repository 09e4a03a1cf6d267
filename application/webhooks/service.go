package webhooks

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
)

// MaxDescriptionLen bounds an endpoint's description, in bytes.
const MaxDescriptionLen = 1000

// DefaultSecretGrace is how long a rotated-out secret keeps signing beside
// the new one when WEBHOOKS_SECRET_GRACE is unset: a day for the merchant
// to deploy the new secret.
const DefaultSecretGrace = 24 * time.Hour

// MaxSecretGrace bounds RotateSecret's ExpireCurrentIn.
const MaxSecretGrace = 7 * 24 * time.Hour

// DefaultMaxEndpoints is how many endpoints not deleted a merchant may have
// when WEBHOOKS_MAX_ENDPOINTS is unset: room for an endpoint per service
// and environment of a large merchant. Every event writes one delivery per
// subscribed endpoint, so the cap bounds what one event of a merchant can
// cost; the merchant's share of the workers (WorkerConfig.PerMerchant)
// bounds what its endpoints cost to send to, however many it has.
const DefaultMaxEndpoints = 50

// Config tunes a Service. The zero value takes the defaults named on each
// field.
type Config struct {
	// SecretGrace is how long the secret a rotation replaces keeps signing
	// when the request names no time; default DefaultSecretGrace.
	SecretGrace time.Duration
	// AllowPrivateTargets lets endpoints use http and name private and
	// loopback addresses: for compose and tests, never in production.
	AllowPrivateTargets bool
	// MaxEndpoints is how many endpoints not deleted a merchant may have;
	// default DefaultMaxEndpoints.
	MaxEndpoints int
}

func (c Config) withDefaults() Config {
	if c.SecretGrace <= 0 {
		c.SecretGrace = DefaultSecretGrace
	}
	if c.MaxEndpoints <= 0 {
		c.MaxEndpoints = DefaultMaxEndpoints
	}
	return c
}

// Service holds the merchant API's use cases: endpoints created, listed,
// read, deleted, their secrets rotated, their attempts listed and events
// redelivered. Every use case takes the access.Principal it acts for and
// applies the scoping rule: another merchant's endpoint is not found, as
// one that does not exist.
type Service struct {
	store  Endpoints
	sealer *Sealer
	now    func() time.Time
	cfg    Config
}

// NewService returns a Service on store, sealing secrets with sealer; now
// is the clock.
func NewService(store Endpoints, sealer *Sealer, now func() time.Time, cfg Config) *Service {
	return &Service{store: store, sealer: sealer, now: now, cfg: cfg.withDefaults()}
}

// newEndpointID returns a new endpoint id: we_ and the hex of a UUIDv7, so
// that ids sort by creation.
func newEndpointID() string { return "we_" + hexUUID() }

// newAttemptID returns a new attempt id, wa_ and the hex of a UUIDv7: the
// attempts list pages by it.
func newAttemptID() string { return "wa_" + hexUUID() }

func hexUUID() string {
	u := uuid.Must(uuid.NewV7())
	return hex.EncodeToString(u[:])
}

// Create creates an endpoint for the principal's merchant (the platform
// names it) and answers it with its secret. A retry with the same
// Idempotency-Key answers the endpoint the first request created, as it is
// now, without a secret: a secret is shown once, and a replay stored for
// days must not hand it to whoever holds the key (a client that lost the
// first answer rotates the secret). Errors: ErrInvalidEndpoint,
// ErrTooManyEndpoints, idempotency.ErrInvalidKey, ErrKeyReused,
// ErrKeyInFlight, access.ErrUnauthenticated, dependency.ErrUnavailable.
func (s *Service) Create(ctx context.Context, c CreateEndpoint) (Created, error) {
	if !c.Principal.Valid() {
		return Created{}, access.ErrUnauthenticated
	}
	merchant := c.MerchantID
	switch {
	case c.Principal.IsPlatform() && merchant == "":
		return Created{}, fmt.Errorf("%w: merchant_id is required with the platform's key", ErrInvalidEndpoint)
	case !validMerchantID(merchant) && merchant != "":
		return Created{}, fmt.Errorf("%w: merchant_id must be UTF-8 text of at most %d bytes, without control characters", ErrInvalidEndpoint, maxMerchantIDLen)
	case !c.Principal.IsPlatform() && merchant == "":
		merchant = c.Principal.Merchant()
	case !c.Principal.ActsFor(merchant):
		return Created{}, fmt.Errorf("%w: merchant_id must be the API key's own merchant, or left out", ErrInvalidEndpoint)
	}
	url, err := CheckURL(c.URL, s.cfg.AllowPrivateTargets)
	if err != nil {
		return Created{}, err
	}
	events, err := checkEvents(c.EnabledEvents)
	if err != nil {
		return Created{}, err
	}
	if len(c.Description) > MaxDescriptionLen || !utf8.ValidString(c.Description) || strings.ContainsRune(c.Description, 0) {
		return Created{}, fmt.Errorf("%w: description must be UTF-8 text of at most %d bytes, without NUL", ErrInvalidEndpoint, MaxDescriptionLen)
	}
	key, err := idempotency.NewKey(merchant, c.IdempotencyKey, "create", c.URL, strings.Join(events, ","), c.Description)
	if err != nil {
		return Created{}, err
	}
	secret := NewSecret()
	e := StoredEndpoint{Endpoint: Endpoint{
		ID: newEndpointID(), MerchantID: merchant, URL: url, Description: c.Description,
		EnabledEvents: events, Status: Enabled, CreatedAt: s.now().UTC().Truncate(time.Microsecond),
	}}
	e.Secrets.Current = s.sealer.Seal(e.ID, secret)
	res, err := s.store.Create(ctx, e, key, s.cfg.MaxEndpoints)
	if err != nil {
		return Created{}, err
	}
	if res.Replayed {
		return Created{Endpoint: res.Endpoint.Endpoint, Replayed: true}, nil
	}
	return Created{Endpoint: res.Endpoint.Endpoint, Secret: FormatSecret(secret)}, nil
}

// maxMerchantIDLen bounds a merchant id, as the payments service bounds it.
const maxMerchantIDLen = 255

// validMerchantID reports whether id is a merchant id the payments service
// could have issued: UTF-8 of at most maxMerchantIDLen bytes without
// control characters (NUL, which Postgres text cannot hold, among them).
func validMerchantID(id string) bool {
	if id == "" || len(id) > maxMerchantIDLen || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// isID reports whether s is an id of prefix (we_, wa_): the prefix and 32
// lower-case hex digits. Anything else names nothing, and the store is not
// asked.
func isID(s, prefix string) bool {
	h, ok := strings.CutPrefix(s, prefix)
	if !ok || len(h) != 32 {
		return false
	}
	for i := range len(h) {
		if (h[i] < '0' || h[i] > '9') && (h[i] < 'a' || h[i] > 'f') {
			return false
		}
	}
	return true
}

// checkEvents returns the subscribed types without repeats, in the order
// given: known types, or AllEvents alone.
func checkEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, fmt.Errorf("%w: enabled_events must name at least one event type, or %q", ErrInvalidEndpoint, AllEvents)
	}
	var out []string
	for _, e := range events {
		if _, ok := eventTypes[e]; !ok && e != AllEvents {
			return nil, fmt.Errorf("%w: enabled_events: unknown event type %q; want %s or %q", ErrInvalidEndpoint, e, strings.Join(EventTypes(), ", "), AllEvents)
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	if slices.Contains(out, AllEvents) && len(out) > 1 {
		return nil, fmt.Errorf("%w: enabled_events: %q stands alone, it already names every type", ErrInvalidEndpoint, AllEvents)
	}
	return out, nil
}

// endpoint returns endpoint id if who may see it: another merchant's is
// ErrEndpointNotFound, as one that does not exist.
func (s *Service) endpoint(ctx context.Context, who access.Principal, id string) (StoredEndpoint, error) {
	if !who.Valid() {
		return StoredEndpoint{}, access.ErrUnauthenticated
	}
	if !isID(id, "we_") {
		return StoredEndpoint{}, fmt.Errorf("%w: not an endpoint id", ErrEndpointNotFound)
	}
	e, err := s.store.Endpoint(ctx, id)
	if err != nil {
		return StoredEndpoint{}, err
	}
	if !who.ActsFor(e.MerchantID) {
		return StoredEndpoint{}, fmt.Errorf("%w: %s", ErrEndpointNotFound, id)
	}
	return e, nil
}

// Get returns endpoint id, deleted or not (DeletedAt says). Errors:
// ErrEndpointNotFound, access.ErrUnauthenticated, dependency.ErrUnavailable.
func (s *Service) Get(ctx context.Context, who access.Principal, id string) (Endpoint, error) {
	e, err := s.endpoint(ctx, who, id)
	return e.Endpoint, err
}

// Delete deletes endpoint id: it is sent nothing more, and its pending
// deliveries are canceled. Deleting it again answers it as it is. Errors:
// ErrEndpointNotFound, access.ErrUnauthenticated, dependency.ErrUnavailable.
func (s *Service) Delete(ctx context.Context, who access.Principal, id string) (Endpoint, error) {
	e, err := s.endpoint(ctx, who, id)
	if err != nil || !e.DeletedAt.IsZero() {
		return e.Endpoint, err
	}
	d, err := s.store.DeleteEndpoint(ctx, id, s.now().UTC().Truncate(time.Microsecond))
	return d.Endpoint, err
}

// RotateSecret gives endpoint r.EndpointID a new secret, answered once; the
// current one keeps signing beside it for r.ExpireCurrentIn (0: the
// configured grace, at most MaxSecretGrace). A secret a previous rotation
// kept is replaced. Errors: ErrEndpointNotFound, ErrEndpointDeleted,
// ErrInvalidEndpoint (a grace out of range), access.ErrUnauthenticated,
// dependency.ErrUnavailable.
func (s *Service) RotateSecret(ctx context.Context, r RotateSecret) (Created, error) {
	grace := r.ExpireCurrentIn
	switch {
	case grace == 0:
		grace = s.cfg.SecretGrace
	case grace < 0 || grace > MaxSecretGrace:
		return Created{}, fmt.Errorf("%w: expire_current_in_seconds must be from 0 to %d", ErrInvalidEndpoint, int(MaxSecretGrace.Seconds()))
	}
	e, err := s.endpoint(ctx, r.Principal, r.EndpointID)
	if err != nil {
		return Created{}, err
	}
	if !e.DeletedAt.IsZero() {
		return Created{}, fmt.Errorf("%w: %s", ErrEndpointDeleted, e.ID)
	}
	secret := NewSecret()
	rotated, err := s.store.RotateSecret(ctx, e.ID, s.sealer.Seal(e.ID, secret), s.now().Add(grace).UTC().Truncate(time.Microsecond))
	if err != nil {
		return Created{}, err
	}
	return Created{Endpoint: rotated.Endpoint, Secret: FormatSecret(secret)}, nil
}

// List returns one page of endpoints not deleted, newest first: a
// merchant's own, or for the platform a merchant's or everyone's. Errors:
// ErrInvalidListQuery, ErrUnknownCursor, access.ErrUnauthenticated,
// dependency.ErrUnavailable.
func (s *Service) List(ctx context.Context, l ListEndpoints) (EndpointPage, error) {
	if !l.Principal.Valid() {
		return EndpointPage{}, access.ErrUnauthenticated
	}
	invalid := func(detail string) error { return fmt.Errorf("%w: %s", ErrInvalidListQuery, detail) }
	merchant := l.MerchantID
	switch {
	case merchant != "" && !validMerchantID(merchant):
		return EndpointPage{}, invalid(fmt.Sprintf("merchant_id must be UTF-8 text of at most %d bytes, without control characters", maxMerchantIDLen))
	case !l.Principal.IsPlatform() && merchant == "":
		merchant = l.Principal.Merchant()
	case !l.Principal.ActsFor(merchant):
		return EndpointPage{}, invalid("merchant_id must be the API key's own merchant, or left out")
	}
	limit, err := pageLimit(l.Limit, l.StartingAfter, l.EndingBefore)
	if err != nil {
		return EndpointPage{}, err
	}
	q := EndpointQuery{MerchantID: merchant, Limit: limit + 1}
	cursor := func(id string) (*Position, error) {
		if !isID(id, "we_") {
			return nil, fmt.Errorf("%w: not an endpoint id", ErrUnknownCursor)
		}
		e, err := s.store.Endpoint(ctx, id)
		if errors.Is(err, ErrEndpointNotFound) || err == nil && (!e.DeletedAt.IsZero() || merchant != "" && e.MerchantID != merchant || !l.Principal.ActsFor(e.MerchantID)) {
			return nil, fmt.Errorf("%w: %s", ErrUnknownCursor, id)
		}
		if err != nil {
			return nil, err
		}
		return &Position{CreatedAt: e.CreatedAt, ID: e.ID}, nil
	}
	if l.StartingAfter != "" {
		q.After, err = cursor(l.StartingAfter)
	} else if l.EndingBefore != "" {
		q.Before, err = cursor(l.EndingBefore)
	}
	if err != nil {
		return EndpointPage{}, err
	}
	es, err := s.store.ListEndpoints(ctx, q)
	if err != nil {
		return EndpointPage{}, err
	}
	page := EndpointPage{Endpoints: make([]Endpoint, 0, len(es))}
	for _, e := range es {
		page.Endpoints = append(page.Endpoints, e.Endpoint)
	}
	return trimPage(page.Endpoints, limit, q.Before != nil, func(es []Endpoint, more bool) EndpointPage {
		return EndpointPage{Endpoints: es, HasMore: more}
	}), nil
}

// pageLimit checks a list's limit and cursors and returns the page size.
func pageLimit(limit int, after, before string) (int, error) {
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 1 || limit > MaxListLimit:
		return 0, fmt.Errorf("%w: limit must be from 1 to %d", ErrInvalidListQuery, MaxListLimit)
	}
	if after != "" && before != "" {
		return 0, fmt.Errorf("%w: starting_after and ending_before cannot both be given", ErrInvalidListQuery)
	}
	return limit, nil
}

// trimPage cuts the one extra row a list reads to tell whether it goes on:
// for a page before a cursor, the extra is the newest.
func trimPage[T, P any](rows []T, limit int, before bool, page func([]T, bool) P) P {
	if len(rows) <= limit {
		return page(rows, false)
	}
	if before {
		return page(rows[1:], true)
	}
	return page(rows[:limit], true)
}

// Attempts returns one page of an endpoint's attempts, newest first, a
// deleted endpoint's included. Errors: ErrEndpointNotFound,
// ErrInvalidListQuery, ErrUnknownCursor, access.ErrUnauthenticated,
// dependency.ErrUnavailable.
func (s *Service) Attempts(ctx context.Context, l ListAttempts) (AttemptPage, error) {
	e, err := s.endpoint(ctx, l.Principal, l.EndpointID)
	if err != nil {
		return AttemptPage{}, err
	}
	limit, err := pageLimit(l.Limit, l.StartingAfter, l.EndingBefore)
	if err != nil {
		return AttemptPage{}, err
	}
	for _, c := range []string{l.StartingAfter, l.EndingBefore} {
		if c == "" {
			continue
		}
		if !isID(c, "wa_") {
			return AttemptPage{}, fmt.Errorf("%w: not an attempt id", ErrUnknownCursor)
		}
		if _, err := s.store.Attempt(ctx, e.ID, c); err != nil {
			return AttemptPage{}, err
		}
	}
	as, err := s.store.Attempts(ctx, AttemptQuery{EndpointID: e.ID, Limit: limit + 1, After: l.StartingAfter, Before: l.EndingBefore})
	if err != nil {
		return AttemptPage{}, err
	}
	return trimPage(as, limit, l.EndingBefore != "", func(as []Attempt, more bool) AttemptPage {
		return AttemptPage{Attempts: as, HasMore: more}
	}), nil
}

// Redeliver schedules one more attempt, due now, of an event the endpoint
// was sent — delivered, retrying or parked — with the same webhook-id, so
// a receiver that has it already can tell. A parked delivery is parked
// again if this attempt fails too. Errors: ErrEndpointNotFound,
// ErrEndpointDeleted, ErrEndpointDisabled, ErrEventNotFound,
// access.ErrUnauthenticated, dependency.ErrUnavailable.
func (s *Service) Redeliver(ctx context.Context, r Redeliver) error {
	e, err := s.endpoint(ctx, r.Principal, r.EndpointID)
	if err != nil {
		return err
	}
	switch {
	case !e.DeletedAt.IsZero():
		return fmt.Errorf("%w: %s", ErrEndpointDeleted, e.ID)
	case e.Status == Disabled:
		return fmt.Errorf("%w: %s: %s", ErrEndpointDisabled, e.ID, e.DisabledReason)
	}
	id, err := uuid.Parse(r.EventID)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrEventNotFound, r.EventID)
	}
	return s.store.Redeliver(ctx, e.ID, id.String(), s.now().UTC())
}

// Recover queues, for one more attempt each, the endpoint's deliveries
// created at or after r.Since that failed and wait for a retry, or are
// parked: the oldest first, at most r.Limit per call. An answer with
// HasMore goes on with r.StartingAfter set to its Last. They are due now,
// behind what is already due, and sent within the merchant's share of the
// workers like any delivery; a delivery already due or in flight is left
// as it is, so a call repeated changes nothing. With an Idempotency-Key, a
// retry answers the first call's answer. Errors: ErrEndpointNotFound,
// ErrEndpointDeleted, ErrEndpointDisabled, ErrInvalidRecover,
// ErrUnknownCursor, idempotency.ErrInvalidKey, ErrKeyReused,
// ErrKeyInFlight, access.ErrUnauthenticated, dependency.ErrUnavailable.
func (s *Service) Recover(ctx context.Context, r Recover) (Recovery, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	limit := r.Limit
	switch {
	case r.Since.IsZero():
		return Recovery{}, fmt.Errorf("%w: since is required", ErrInvalidRecover)
	case r.Since.After(now):
		return Recovery{}, fmt.Errorf("%w: since is in the future", ErrInvalidRecover)
	case limit == 0:
		limit = DefaultRecoverLimit
	case limit < 1 || limit > MaxRecoverLimit:
		return Recovery{}, fmt.Errorf("%w: limit must be from 1 to %d", ErrInvalidRecover, MaxRecoverLimit)
	}
	after := ""
	if r.StartingAfter != "" {
		id, err := uuid.Parse(r.StartingAfter)
		if err != nil {
			return Recovery{}, fmt.Errorf("%w: starting_after is not an event id", ErrUnknownCursor)
		}
		after = id.String()
	}
	e, err := s.endpoint(ctx, r.Principal, r.EndpointID)
	if err != nil {
		return Recovery{}, err
	}
	switch {
	case !e.DeletedAt.IsZero():
		return Recovery{}, fmt.Errorf("%w: %s", ErrEndpointDeleted, e.ID)
	case e.Status == Disabled:
		return Recovery{}, fmt.Errorf("%w: %s: %s", ErrEndpointDisabled, e.ID, e.DisabledReason)
	}
	since := r.Since.UTC().Truncate(time.Microsecond)
	key, err := idempotency.NewKey(e.MerchantID, r.IdempotencyKey, "recover", e.ID, since.Format(time.RFC3339Nano), strconv.Itoa(limit), after)
	if err != nil {
		return Recovery{}, err
	}
	return s.store.Recover(ctx, RecoverQuery{EndpointID: e.ID, Since: since, After: after, Limit: limit, At: now}, key)
}
