package webhooksapi_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/dependency"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// fakeService is a hand-written, in-memory webhooks service: it keeps the
// rules the API relies on — scoping to the principal's merchants (another
// merchant's endpoint is not found), the Idempotency-Key's replay, lists
// newest first by id cursors — and nothing of delivery. Its zero value is
// not usable: newFakeService.
type fakeService struct {
	mu           sync.Mutex
	now          time.Time
	endpoints    []webhooks.Endpoint // in creation order
	secrets      map[string]webhooks.Secret
	keys         map[string]idemEntry // merchant + "\x00" + key
	attempts     map[string][]webhooks.Attempt
	redelivered  []webhooks.Redeliver
	recovered    []webhooks.Recover
	recoveries   map[string]webhooks.Recovery // merchant + "\x00" + key
	maxEndpoints int
	rotated      []webhooks.RotateSecret
	lists        []webhooks.ListEndpoints
}

// keyInFlight is a key the fake holds as if its first request never
// finished: every request with it meets idempotency.ErrKeyInFlight.
const keyInFlight = "in-flight"

type idemEntry struct {
	request string
	answer  webhooks.Created
}

func newFakeService() *fakeService {
	return &fakeService{
		now:     time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		secrets: map[string]webhooks.Secret{}, keys: map[string]idemEntry{}, attempts: map[string][]webhooks.Attempt{},
		recoveries: map[string]webhooks.Recovery{}, maxEndpoints: 1000,
	}
}

// merchant is whose endpoint a create makes: the platform names one, a
// merchant's key is its own.
func merchant(p access.Principal, named string) (string, error) {
	switch {
	case !p.Valid():
		return "", access.ErrUnauthenticated
	case p.IsPlatform() && named == "":
		return "", fmt.Errorf("%w: the platform's key must name merchant_id", webhooks.ErrInvalidEndpoint)
	case p.IsPlatform():
		return named, nil
	case named != "" && named != p.Merchant():
		return "", fmt.Errorf("%w: merchant_id names another merchant", webhooks.ErrInvalidEndpoint)
	}
	return p.Merchant(), nil
}

func (f *fakeService) Create(_ context.Context, c webhooks.CreateEndpoint) (webhooks.Created, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := merchant(c.Principal, c.MerchantID)
	if err != nil {
		return webhooks.Created{}, err
	}
	if !strings.HasPrefix(c.URL, "https://") {
		return webhooks.Created{}, fmt.Errorf("%w: the url must be https", webhooks.ErrInvalidEndpoint)
	}
	if len(c.EnabledEvents) == 0 {
		return webhooks.Created{}, fmt.Errorf("%w: no enabled_events", webhooks.ErrInvalidEndpoint)
	}
	request := fmt.Sprintf("%s|%s|%q|%s", m, c.URL, c.EnabledEvents, c.Description)
	if _, err := idempotency.NewKey(m, c.IdempotencyKey); err != nil {
		return webhooks.Created{}, err
	}
	if c.IdempotencyKey == keyInFlight {
		return webhooks.Created{}, idempotency.ErrKeyInFlight
	}
	idem := m + "\x00" + c.IdempotencyKey
	if c.IdempotencyKey != "" {
		if e, ok := f.keys[idem]; ok {
			if e.request != request {
				return webhooks.Created{}, idempotency.ErrKeyReused
			}
			// The endpoint as it is now, never its secret again.
			return webhooks.Created{Endpoint: e.answer.Endpoint, Replayed: true}, nil
		}
	}
	n := 0
	for _, e := range f.endpoints {
		if e.MerchantID == m && e.DeletedAt.IsZero() {
			n++
		}
	}
	if n >= f.maxEndpoints {
		return webhooks.Created{}, webhooks.ErrTooManyEndpoints
	}
	f.now = f.now.Add(time.Second)
	e := webhooks.Endpoint{
		ID: fmt.Sprintf("we_%04d", len(f.endpoints)+1), MerchantID: m, URL: c.URL, Description: c.Description,
		EnabledEvents: slices.Clone(c.EnabledEvents), Status: webhooks.Enabled, CreatedAt: f.now,
	}
	f.endpoints = append(f.endpoints, e)
	secret := webhooks.Secret(fmt.Sprintf("whsec_c2VjcmV0IG9mIHRoaXMgZW5kcG9pbnQ%04d", len(f.endpoints)))
	f.secrets[e.ID] = secret
	out := webhooks.Created{Endpoint: e, Secret: secret}
	if c.IdempotencyKey != "" {
		f.keys[idem] = idemEntry{request, out}
	}
	return out, nil
}

// find is the endpoint id as who may see it; f.mu is held.
func (f *fakeService) find(who access.Principal, id string) (int, error) {
	if !who.Valid() {
		return 0, access.ErrUnauthenticated
	}
	for i, e := range f.endpoints {
		if e.ID == id && who.ActsFor(e.MerchantID) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: %s", webhooks.ErrEndpointNotFound, id)
}

func (f *fakeService) List(_ context.Context, l webhooks.ListEndpoints) (webhooks.EndpointPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, l)
	if !l.Principal.Valid() {
		return webhooks.EndpointPage{}, access.ErrUnauthenticated
	}
	if l.MerchantID != "" && !l.Principal.ActsFor(l.MerchantID) {
		return webhooks.EndpointPage{}, fmt.Errorf("%w: merchant_id names a merchant this key may not list", webhooks.ErrInvalidListQuery)
	}
	if l.Limit > webhooks.MaxListLimit {
		return webhooks.EndpointPage{}, fmt.Errorf("%w: limit must be from 1 to %d", webhooks.ErrInvalidListQuery, webhooks.MaxListLimit)
	}
	var all []webhooks.Endpoint // newest first
	for _, e := range slices.Backward(f.endpoints) {
		if e.DeletedAt.IsZero() && l.Principal.ActsFor(e.MerchantID) && (l.MerchantID == "" || e.MerchantID == l.MerchantID) {
			all = append(all, e)
		}
	}
	items, more, err := page(all, func(e webhooks.Endpoint) string { return e.ID }, l.Limit, l.StartingAfter, l.EndingBefore)
	return webhooks.EndpointPage{Endpoints: items, HasMore: more}, err
}

// page is one page of all (newest first) after or before a cursor.
func page[T any](all []T, id func(T) string, limit int, after, before string) ([]T, bool, error) {
	if limit == 0 {
		limit = webhooks.DefaultListLimit
	}
	if after != "" && before != "" {
		return nil, false, fmt.Errorf("%w: starting_after and ending_before together", webhooks.ErrInvalidListQuery)
	}
	at := func(cursor string) (int, error) {
		i := slices.IndexFunc(all, func(t T) bool { return id(t) == cursor })
		if i < 0 {
			return 0, fmt.Errorf("%w: %s", webhooks.ErrUnknownCursor, cursor)
		}
		return i, nil
	}
	switch {
	case after != "":
		i, err := at(after)
		if err != nil {
			return nil, false, err
		}
		rest := all[i+1:]
		return rest[:min(limit, len(rest))], len(rest) > limit, nil
	case before != "":
		i, err := at(before)
		if err != nil {
			return nil, false, err
		}
		rest := all[:i]
		return rest[max(0, len(rest)-limit):], len(rest) > limit, nil
	}
	return all[:min(limit, len(all))], len(all) > limit, nil
}

func (f *fakeService) Get(_ context.Context, who access.Principal, id string) (webhooks.Endpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, err := f.find(who, id)
	if err != nil {
		return webhooks.Endpoint{}, err
	}
	return f.endpoints[i], nil
}

func (f *fakeService) Delete(_ context.Context, who access.Principal, id string) (webhooks.Endpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, err := f.find(who, id)
	if err != nil {
		return webhooks.Endpoint{}, err
	}
	if f.endpoints[i].DeletedAt.IsZero() { // as the service: a second delete changes nothing
		f.endpoints[i].DeletedAt = f.now
	}
	return f.endpoints[i], nil
}

func (f *fakeService) RotateSecret(_ context.Context, r webhooks.RotateSecret) (webhooks.Created, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, err := f.find(r.Principal, r.EndpointID)
	if err != nil {
		return webhooks.Created{}, err
	}
	if !f.endpoints[i].DeletedAt.IsZero() {
		return webhooks.Created{}, fmt.Errorf("%w: %s", webhooks.ErrEndpointDeleted, r.EndpointID)
	}
	f.rotated = append(f.rotated, r)
	secret := webhooks.Secret(fmt.Sprintf("whsec_cm90YXRlZCBzZWNyZXQ%04d", len(f.rotated)))
	f.secrets[r.EndpointID] = secret
	return webhooks.Created{Endpoint: f.endpoints[i], Secret: secret}, nil
}

// attempted records attempts of endpoint id, newest last.
func (f *fakeService) attempted(id string, at ...webhooks.Attempt) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts[id] = append(f.attempts[id], at...)
}

func (f *fakeService) Attempts(_ context.Context, l webhooks.ListAttempts) (webhooks.AttemptPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.find(l.Principal, l.EndpointID); err != nil {
		return webhooks.AttemptPage{}, err
	}
	all := slices.Clone(f.attempts[l.EndpointID])
	slices.Reverse(all)
	items, more, err := page(all, func(a webhooks.Attempt) string { return a.ID }, l.Limit, l.StartingAfter, l.EndingBefore)
	return webhooks.AttemptPage{Attempts: items, HasMore: more}, err
}

func (f *fakeService) Redeliver(_ context.Context, r webhooks.Redeliver) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, err := f.find(r.Principal, r.EndpointID)
	if err != nil {
		return err
	}
	if !f.endpoints[i].DeletedAt.IsZero() {
		return fmt.Errorf("%w: %s", webhooks.ErrEndpointDeleted, r.EndpointID)
	}
	if !slices.ContainsFunc(f.attempts[r.EndpointID], func(a webhooks.Attempt) bool { return a.EventID == r.EventID }) {
		return fmt.Errorf("%w: %s", webhooks.ErrEventNotFound, r.EventID)
	}
	f.redelivered = append(f.redelivered, r)
	return nil
}

func (f *fakeService) Recover(_ context.Context, r webhooks.Recover) (webhooks.Recovery, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, err := f.find(r.Principal, r.EndpointID)
	if err != nil {
		return webhooks.Recovery{}, err
	}
	e := f.endpoints[i]
	switch {
	case !e.DeletedAt.IsZero():
		return webhooks.Recovery{}, fmt.Errorf("%w: %s", webhooks.ErrEndpointDeleted, r.EndpointID)
	case r.Since.After(f.now):
		return webhooks.Recovery{}, fmt.Errorf("%w: since is in the future", webhooks.ErrInvalidRecover)
	}
	if _, err := idempotency.NewKey(e.MerchantID, r.IdempotencyKey); err != nil {
		return webhooks.Recovery{}, err
	}
	if r.IdempotencyKey == keyInFlight {
		return webhooks.Recovery{}, idempotency.ErrKeyInFlight
	}
	idem := e.MerchantID + "\x00" + r.IdempotencyKey
	if r.IdempotencyKey != "" {
		if got, ok := f.recoveries[idem]; ok {
			got.Replayed = true
			return got, nil
		}
	}
	// Every attempt of the endpoint whose event is not yet queued again.
	var out webhooks.Recovery
	for _, a := range f.attempts[r.EndpointID] {
		if a.Outcome != webhooks.Delivered && !slices.ContainsFunc(f.recovered, func(q webhooks.Recover) bool { return q.StartingAfter == a.EventID }) {
			out.Queued++
			out.Last = a.EventID
		}
	}
	f.recovered = append(f.recovered, r)
	if r.IdempotencyKey != "" {
		f.recoveries[idem] = out
	}
	return out, nil
}

// fakeAuth is the Authenticator: the keys it knows, and down, when set, the
// outage every call meets.
type fakeAuth struct {
	mu          sync.Mutex
	keys        map[string]access.Principal
	down        bool
	rateLimited bool
	calls       map[string]int
}

func (a *fakeAuth) Authenticate(_ context.Context, key string) (access.Principal, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := access.ParseKey(key); err != nil {
		return access.Principal{}, err
	}
	if a.calls == nil {
		a.calls = map[string]int{}
	}
	a.calls[key]++
	if a.rateLimited {
		return access.Principal{}, access.ErrRateLimited
	}
	if a.down {
		return access.Principal{}, fmt.Errorf("%w: payments did not answer", dependency.ErrUnavailable)
	}
	p, ok := a.keys[key]
	if !ok {
		return access.Principal{}, access.ErrUnknownKey
	}
	return p, nil
}

func (a *fakeAuth) setDown(down bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.down = down
}

func (a *fakeAuth) setRateLimited(limited bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rateLimited = limited
}

func (a *fakeAuth) callsFor(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[key]
}
