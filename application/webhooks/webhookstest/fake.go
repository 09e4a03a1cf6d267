// Package webhookstest holds the webhooks store's in-memory fake and the
// contract suite it shares with the Postgres store
// (adapters/postgres/webhookstore), so that the unit tests of the use cases
// and the worker, which run on the fake, rely on what Postgres does.
package webhookstest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// Store is everything the webhooks database is to the service: the shared
// inbox with the fan-out bound to its transactions, the merchant API's
// endpoints and the workers' deliveries.
type Store interface {
	inbox.Recorder[webhooks.Fanout]
	inbox.Backlog[webhooks.Fanout]
	inbox.Admin
	webhooks.Endpoints
	webhooks.Deliveries
}

var _ Store = (*FakeStore)(nil)

// FakeStore is an in-memory webhooks database: the shared inbox
// (inboxtest.FakeStore) with the webhooks tables beside it. Safe for
// concurrent use.
type FakeStore struct {
	*inboxtest.FakeStore[webhooks.Fanout]
	t *tables
}

// NewFakeStore returns an empty FakeStore.
func NewFakeStore() *FakeStore {
	t := &tables{endpoints: map[string]webhooks.StoredEndpoint{}, deliveries: map[int64]delivery{},
		pairs: map[[2]string]int64{}, keys: map[[2]string]storedKey{}, served: map[string]int64{}}
	return &FakeStore{FakeStore: inboxtest.NewFakeStore[webhooks.Fanout](t), t: t}
}

type delivery struct {
	id                       int64
	endpointID, eventID, typ string
	payload                  []byte
	status                   webhooks.DeliveryStatus
	attempts                 int
	createdAt, next, lease   time.Time
	lastError                string
}

type storedKey struct {
	key      idempotency.Key
	endpoint string
	answer   webhooks.Recovery // a recovery's
}

type tables struct {
	mu         sync.Mutex
	endpoints  map[string]webhooks.StoredEndpoint
	deliveries map[int64]delivery
	pairs      map[[2]string]int64 // (endpoint, event) → delivery
	attempts   []webhooks.Attempt
	keys       map[[2]string]storedKey
	lastID     int64
	// served is each merchant's place in the claim's turn: the lowest is
	// served first; servedSeq the last place given.
	served    map[string]int64
	servedSeq int64
}

// Repos implements inboxtest.Tables.
func (t *tables) Repos() webhooks.Fanout { return fanout{t} }

// Snapshot implements inboxtest.Tables: the deliveries are all a fan-out
// writes.
func (t *tables) Snapshot() func() {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, p, id := maps.Clone(t.deliveries), maps.Clone(t.pairs), t.lastID
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.deliveries, t.pairs, t.lastID = d, p, id
	}
}

// Commit implements inboxtest.Tables.
func (t *tables) Commit() error { return nil }

type fanout struct{ t *tables }

// Enqueue implements webhooks.Fanout.
func (f fanout) Enqueue(_ context.Context, d webhooks.NewDelivery) (int, error) {
	t := f.t
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, id := range slices.Sorted(maps.Keys(t.endpoints)) {
		e := t.endpoints[id]
		if e.MerchantID != d.MerchantID || e.Status != webhooks.Enabled || !e.DeletedAt.IsZero() || !webhooks.Subscribed(e.EnabledEvents, d.EventType) {
			continue
		}
		pair := [2]string{e.ID, d.EventID}
		if _, ok := t.pairs[pair]; ok {
			continue
		}
		t.lastID++
		t.deliveries[t.lastID] = delivery{id: t.lastID, endpointID: e.ID, eventID: d.EventID, typ: d.EventType,
			payload: slices.Clone(d.Payload), status: webhooks.DeliveryPending, createdAt: d.At, next: d.At}
		t.pairs[pair] = t.lastID
		n++
	}
	return n, nil
}

func cloneEndpoint(e webhooks.StoredEndpoint) webhooks.StoredEndpoint {
	e.EnabledEvents = slices.Clone(e.EnabledEvents)
	return e
}

// Create implements webhooks.Endpoints.
func (s *FakeStore) Create(_ context.Context, e webhooks.StoredEndpoint, key *idempotency.Key, max int) (webhooks.CreateResult, error) {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.served[e.MerchantID]; !ok {
		t.served[e.MerchantID] = 0
	}
	if key != nil {
		if k, ok := t.keys[[2]string{key.Merchant, key.Key}]; ok {
			if k.key.Fingerprint != key.Fingerprint {
				return webhooks.CreateResult{}, fmt.Errorf("%w: %s", idempotency.ErrKeyReused, key.Key)
			}
			return webhooks.CreateResult{Endpoint: cloneEndpoint(t.endpoints[k.endpoint]), Replayed: true}, nil
		}
	}
	n := 0
	for _, o := range t.endpoints {
		if o.MerchantID == e.MerchantID && o.DeletedAt.IsZero() {
			n++
		}
	}
	if n >= max {
		return webhooks.CreateResult{}, fmt.Errorf("%w: %d of %s", webhooks.ErrTooManyEndpoints, n, e.MerchantID)
	}
	if key != nil {
		t.keys[[2]string{key.Merchant, key.Key}] = storedKey{key: *key, endpoint: e.ID}
	}
	t.endpoints[e.ID] = cloneEndpoint(e)
	return webhooks.CreateResult{Endpoint: cloneEndpoint(e)}, nil
}

// Endpoint implements webhooks.Endpoints.
func (s *FakeStore) Endpoint(_ context.Context, id string) (webhooks.StoredEndpoint, error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	e, ok := s.t.endpoints[id]
	if !ok {
		return webhooks.StoredEndpoint{}, fmt.Errorf("%w: %s", webhooks.ErrEndpointNotFound, id)
	}
	return cloneEndpoint(e), nil
}

// older reports whether a comes after b in the list's order (newest
// first).
func older(a, b webhooks.Position) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}

// ListEndpoints implements webhooks.Endpoints.
func (s *FakeStore) ListEndpoints(_ context.Context, q webhooks.EndpointQuery) ([]webhooks.StoredEndpoint, error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	var all []webhooks.StoredEndpoint
	for _, e := range s.t.endpoints {
		pos := webhooks.Position{CreatedAt: e.CreatedAt, ID: e.ID}
		switch {
		case !e.DeletedAt.IsZero(), q.MerchantID != "" && e.MerchantID != q.MerchantID,
			q.After != nil && !older(pos, *q.After), q.Before != nil && !older(*q.Before, pos):
			continue
		}
		all = append(all, cloneEndpoint(e))
	}
	slices.SortFunc(all, func(a, b webhooks.StoredEndpoint) int {
		if older(webhooks.Position{CreatedAt: a.CreatedAt, ID: a.ID}, webhooks.Position{CreatedAt: b.CreatedAt, ID: b.ID}) {
			return 1
		}
		return -1
	})
	if q.Before != nil && len(all) > q.Limit {
		return all[len(all)-q.Limit:], nil
	}
	return all[:min(len(all), q.Limit)], nil
}

// DeleteEndpoint implements webhooks.Endpoints.
func (s *FakeStore) DeleteEndpoint(_ context.Context, id string, at time.Time) (webhooks.StoredEndpoint, error) {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.endpoints[id]
	if !ok {
		return webhooks.StoredEndpoint{}, fmt.Errorf("%w: %s", webhooks.ErrEndpointNotFound, id)
	}
	if e.DeletedAt.IsZero() {
		e.DeletedAt = at
		t.endpoints[id] = e
		t.cancelPending(id, 0, "endpoint deleted")
	}
	return cloneEndpoint(e), nil
}

// cancelPending cancels endpoint id's pending deliveries but except.
func (t *tables) cancelPending(id string, except int64, why string) {
	for k, d := range t.deliveries {
		if d.endpointID == id && d.status == webhooks.DeliveryPending && k != except {
			d.status, d.next, d.lease, d.lastError = webhooks.DeliveryCanceled, time.Time{}, time.Time{}, why
			t.deliveries[k] = d
		}
	}
}

// RotateSecret implements webhooks.Endpoints.
func (s *FakeStore) RotateSecret(_ context.Context, id string, current []byte, previousExpires time.Time) (webhooks.StoredEndpoint, error) {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.endpoints[id]
	switch {
	case !ok:
		return webhooks.StoredEndpoint{}, fmt.Errorf("%w: %s", webhooks.ErrEndpointNotFound, id)
	case !e.DeletedAt.IsZero():
		return webhooks.StoredEndpoint{}, fmt.Errorf("%w: %s", webhooks.ErrEndpointDeleted, id)
	}
	e.Secrets = webhooks.SealedSecrets{Current: current, Previous: e.Secrets.Current, PreviousExpiresAt: previousExpires}
	t.endpoints[id] = e
	return cloneEndpoint(e), nil
}

// Attempts implements webhooks.Endpoints.
func (s *FakeStore) Attempts(_ context.Context, q webhooks.AttemptQuery) ([]webhooks.Attempt, error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	var out []webhooks.Attempt
	for _, a := range s.t.attempts {
		if a.EndpointID != q.EndpointID || q.After != "" && a.ID >= q.After || q.Before != "" && a.ID <= q.Before {
			continue
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b webhooks.Attempt) int { return cmp.Compare(b.ID, a.ID) })
	if q.Before != "" && len(out) > q.Limit {
		return out[len(out)-q.Limit:], nil
	}
	return out[:min(len(out), q.Limit)], nil
}

// Attempt implements webhooks.Endpoints.
func (s *FakeStore) Attempt(_ context.Context, endpointID, id string) (webhooks.Attempt, error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	for _, a := range s.t.attempts {
		if a.ID == id && a.EndpointID == endpointID {
			return a, nil
		}
	}
	return webhooks.Attempt{}, fmt.Errorf("%w: %s", webhooks.ErrUnknownCursor, id)
}

// Redeliver implements webhooks.Endpoints.
func (s *FakeStore) Redeliver(_ context.Context, endpointID, eventID string, at time.Time) error {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.pairs[[2]string{endpointID, eventID}]
	if !ok {
		return fmt.Errorf("%w: %s", webhooks.ErrEventNotFound, eventID)
	}
	d := t.deliveries[id]
	if d.status != webhooks.DeliveryPending {
		d.lease = time.Time{}
	}
	d.status, d.next = webhooks.DeliveryPending, at
	t.deliveries[id] = d
	return nil
}

// Recover implements webhooks.Endpoints.
func (s *FakeStore) Recover(_ context.Context, q webhooks.RecoverQuery, key *idempotency.Key) (webhooks.Recovery, error) {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if key != nil {
		if k, ok := t.keys[[2]string{key.Merchant, key.Key}]; ok {
			if k.key.Fingerprint != key.Fingerprint {
				return webhooks.Recovery{}, fmt.Errorf("%w: %s", idempotency.ErrKeyReused, key.Key)
			}
			r := k.answer
			r.Replayed = true
			return r, nil
		}
	}
	var after *delivery
	if q.After != "" {
		id, ok := t.pairs[[2]string{q.EndpointID, q.After}]
		if !ok {
			return webhooks.Recovery{}, fmt.Errorf("%w: %s", webhooks.ErrUnknownCursor, q.After)
		}
		d := t.deliveries[id]
		after = &d
	}
	var picked []delivery
	for _, d := range t.deliveries {
		failed := d.status == webhooks.DeliveryParked || d.status == webhooks.DeliveryPending && d.attempts > 0 && d.next.After(q.At) && !d.lease.After(q.At)
		if d.endpointID != q.EndpointID || !failed || d.createdAt.Before(q.Since) ||
			after != nil && cmp.Or(d.createdAt.Compare(after.createdAt), cmp.Compare(d.id, after.id)) <= 0 {
			continue
		}
		picked = append(picked, d)
	}
	slices.SortFunc(picked, func(a, b delivery) int { return cmp.Or(a.createdAt.Compare(b.createdAt), cmp.Compare(a.id, b.id)) })
	res := webhooks.Recovery{HasMore: len(picked) > q.Limit}
	picked = picked[:min(len(picked), q.Limit)]
	for i, d := range picked {
		d.status, d.next, d.lease = webhooks.DeliveryPending, q.At.Add(time.Duration(i)*time.Microsecond), time.Time{}
		t.deliveries[d.id] = d
		res.Queued, res.Last = i+1, d.eventID
	}
	if key != nil {
		t.keys[[2]string{key.Merchant, key.Key}] = storedKey{key: *key, endpoint: q.EndpointID, answer: res}
	}
	return res, nil
}

// ClaimDeliveries implements webhooks.Deliveries: the merchants in turn,
// each within its share and its endpoints' caps, as the Postgres claim.
func (s *FakeStore) ClaimDeliveries(_ context.Context, c webhooks.DeliveryClaim) ([]webhooks.Claimed, error) {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	leasedM, leasedE := map[string]int{}, map[string]int{}
	due := map[string][]delivery{} // by merchant
	for _, d := range t.deliveries {
		if d.status != webhooks.DeliveryPending {
			continue
		}
		e := t.endpoints[d.endpointID]
		if d.lease.After(c.At) {
			leasedM[e.MerchantID]++
			leasedE[d.endpointID]++
			continue
		}
		if !d.next.After(c.At) && e.Status == webhooks.Enabled && e.DeletedAt.IsZero() {
			due[e.MerchantID] = append(due[e.MerchantID], d)
		}
	}
	merchants := slices.SortedFunc(maps.Keys(t.served), func(a, b string) int {
		return cmp.Or(cmp.Compare(t.served[a], t.served[b]), cmp.Compare(a, b))
	})
	var out []webhooks.Claimed
	for _, m := range merchants {
		ds := due[m]
		slices.SortFunc(ds, func(a, b delivery) int { return cmp.Or(a.next.Compare(b.next), cmp.Compare(a.id, b.id)) })
		took := 0
		for _, d := range ds {
			e := t.endpoints[d.endpointID]
			capE := c.PerEndpoint
			if e.Timeouts > 0 {
				capE = 1
			}
			if len(out) == c.Limit || leasedM[m] >= c.PerMerchant {
				break
			}
			if leasedE[d.endpointID] >= capE {
				continue
			}
			leasedM[m]++
			leasedE[d.endpointID]++
			took++
			d.lease = c.LeaseUntil
			t.deliveries[d.id] = d
			out = append(out, webhooks.Claimed{ID: d.id, EndpointID: d.endpointID, EventID: d.eventID, EventType: d.typ,
				Payload: slices.Clone(d.payload), Attempts: d.attempts, CreatedAt: d.createdAt, LeaseUntil: d.lease,
				URL: e.URL, Secrets: e.Secrets, FailingSince: e.FailingSince, Timeouts: e.Timeouts})
		}
		if took > 0 {
			t.servedSeq++
			t.served[m] = t.servedSeq
		}
		if len(out) == c.Limit {
			break
		}
	}
	return out, nil
}

// FinishDelivery implements webhooks.Deliveries.
func (s *FakeStore) FinishDelivery(_ context.Context, f webhooks.Finish) (bool, error) {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.deliveries[f.DeliveryID]
	if !ok {
		return false, fmt.Errorf("no delivery %d", f.DeliveryID)
	}
	t.attempts = append(t.attempts, f.Attempt)
	e := t.endpoints[d.endpointID]
	if f.Attempt.Outcome == webhooks.Delivered {
		e.FailingSince = time.Time{}
	} else if e.FailingSince.IsZero() {
		e.FailingSince = f.Attempt.AttemptedAt
	}
	switch {
	case f.TimedOut:
		e.Timeouts++
	case f.Attempt.StatusCode != 0:
		e.Timeouts = 0
	}
	if f.Disable != "" && e.Status == webhooks.Enabled {
		e.Status, e.DisabledReason = webhooks.Disabled, f.Disable
		t.cancelPending(e.ID, d.id, "endpoint disabled: "+f.Disable)
	}
	t.endpoints[e.ID] = e
	held := d.status == webhooks.DeliveryPending && d.lease.Equal(f.LeaseUntil)
	if !held {
		return false, nil
	}
	d.attempts++
	d.status, d.lease, d.next, d.lastError = f.Status, time.Time{}, time.Time{}, f.Attempt.Error
	if f.Status == webhooks.DeliveryPending {
		d.next = f.NextAttemptAt
	}
	t.deliveries[d.id] = d
	return true, nil
}

// ReleaseDelivery implements webhooks.Deliveries.
func (s *FakeStore) ReleaseDelivery(_ context.Context, id int64, leaseUntil time.Time) error {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if d, ok := t.deliveries[id]; ok && d.status == webhooks.DeliveryPending && d.lease.Equal(leaseUntil) {
		d.lease = time.Time{}
		t.deliveries[id] = d
	}
	return nil
}

// DeliveryStats implements webhooks.Deliveries.
func (s *FakeStore) DeliveryStats(_ context.Context, at time.Time, top int) (webhooks.DeliveryStats, error) {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	var st webhooks.DeliveryStats
	oldest := map[string]time.Time{}
	for _, d := range t.deliveries {
		e := t.endpoints[d.endpointID]
		switch {
		case d.status == webhooks.DeliveryParked:
			st.Parked++
		case d.status == webhooks.DeliveryPending && e.Status == webhooks.Enabled && e.DeletedAt.IsZero():
			st.Pending++
			if o, ok := oldest[e.ID]; !ok || d.createdAt.Before(o) {
				oldest[e.ID] = d.createdAt
			}
		}
	}
	for id, o := range oldest {
		st.Endpoints = append(st.Endpoints, webhooks.EndpointLag{EndpointID: id, OldestUndelivered: max(0, at.Sub(o))})
	}
	slices.SortFunc(st.Endpoints, func(a, b webhooks.EndpointLag) int {
		return cmp.Or(cmp.Compare(b.OldestUndelivered, a.OldestUndelivered), cmp.Compare(a.EndpointID, b.EndpointID))
	})
	if len(st.Endpoints) > 0 {
		st.OldestUndelivered = st.Endpoints[0].OldestUndelivered
	}
	st.Endpoints = st.Endpoints[:min(len(st.Endpoints), top)]
	return st, nil
}

// Delivery is a delivery's state, for tests.
type Delivery struct {
	EndpointID, EventID string
	Status              webhooks.DeliveryStatus
	Attempts            int
	NextAttemptAt       time.Time
	LastError           string
	Payload             []byte
}

// Deliveries returns every delivery, for tests that look at the rows.
func (s *FakeStore) Deliveries() []Delivery {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	var out []Delivery
	for _, id := range slices.Sorted(maps.Keys(s.t.deliveries)) {
		d := s.t.deliveries[id]
		out = append(out, Delivery{EndpointID: d.endpointID, EventID: d.eventID, Status: d.status, Attempts: d.attempts, NextAttemptAt: d.next, LastError: d.lastError, Payload: d.payload})
	}
	return out
}
