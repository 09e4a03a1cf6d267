package webhookstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// RunContract runs the behaviour every webhooks Store must have against a
// fresh, empty store from newStore: the fake and Postgres alike.
func RunContract(t *testing.T, newStore func(t *testing.T) Store) {
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 12, 0, 0, 123_000_000, time.UTC)
	n := 0
	newEndpoint := func(merchant string, events ...string) webhooks.StoredEndpoint {
		n++
		if len(events) == 0 {
			events = []string{webhooks.AllEvents}
		}
		return webhooks.StoredEndpoint{Endpoint: webhooks.Endpoint{
			ID: fmt.Sprintf("we_%032x", n), MerchantID: merchant, URL: fmt.Sprintf("https://example.com/hook/%d", n),
			EnabledEvents: events, Status: webhooks.Enabled, CreatedAt: at.Add(time.Duration(n) * time.Second),
		}, Secrets: webhooks.SealedSecrets{Current: []byte(fmt.Sprintf("sealed-%d", n))}}
	}
	create := func(t *testing.T, s Store, e webhooks.StoredEndpoint) webhooks.StoredEndpoint {
		t.Helper()
		res, err := s.Create(ctx, e, nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		return res.Endpoint
	}
	// publish fans an event of merchant out, as the inbox handler does.
	publish := func(t *testing.T, s Store, merchant, typ string) (string, int) {
		t.Helper()
		id := uuid.NewString()
		body := fmt.Appendf(nil, `{"id":%q,"type":%q,"data":{"merchant_id":%q}}`, id, typ, merchant)
		var wrote int
		_, err := s.Record(ctx, inbox.Message{ID: id, Type: typ, Payload: body, ReceivedAt: at, ProcessedAt: at},
			func(ctx context.Context, f webhooks.Fanout) (string, error) {
				var err error
				wrote, err = f.Enqueue(ctx, webhooks.NewDelivery{MerchantID: merchant, EventID: id, EventType: typ, Payload: body, At: at})
				return "", err
			})
		if err != nil {
			t.Fatal(err)
		}
		return id, wrote
	}
	claimShare := func(t *testing.T, s Store, limit, perEndpoint, perMerchant int, when time.Time) []webhooks.Claimed {
		t.Helper()
		cs, err := s.ClaimDeliveries(ctx, webhooks.DeliveryClaim{Limit: limit, PerEndpoint: perEndpoint, PerMerchant: perMerchant, At: when, LeaseUntil: when.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	// claim claims with no merchant's share binding.
	claim := func(t *testing.T, s Store, limit, per int, when time.Time) []webhooks.Claimed {
		t.Helper()
		return claimShare(t, s, limit, per, 1000, when)
	}
	attemptID := 0
	finish := func(t *testing.T, s Store, c webhooks.Claimed, o webhooks.Outcome, status webhooks.DeliveryStatus, next time.Time, disable string) bool {
		t.Helper()
		attemptID++
		a := webhooks.Attempt{ID: fmt.Sprintf("wa_%032x", attemptID), EndpointID: c.EndpointID, EventID: c.EventID, EventType: c.EventType,
			AttemptedAt: at.Add(time.Duration(attemptID) * time.Millisecond), Latency: 12 * time.Millisecond, Outcome: o}
		switch o {
		case webhooks.Delivered:
			a.StatusCode = 204
		case webhooks.Gone:
			a.StatusCode, a.Error = 410, "answered 410"
		default:
			a.StatusCode, a.Error = 500, "answered 500"
		}
		held, err := s.FinishDelivery(ctx, webhooks.Finish{DeliveryID: c.ID, LeaseUntil: c.LeaseUntil, Attempt: a, Status: status, NextAttemptAt: next, Disable: disable})
		if err != nil {
			t.Fatal(err)
		}
		return held
	}
	stats := func(t *testing.T, s Store) webhooks.DeliveryStats {
		t.Helper()
		st, err := s.DeliveryStats(ctx, at.Add(time.Hour), 20)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	t.Run("create, get, and the idempotency key", func(t *testing.T) {
		s := newStore(t)
		e := newEndpoint("mer_a", "payment.created", "payment.refunded")
		e.Description = "orders"
		key := &idempotency.Key{Merchant: "mer_a", Key: "k1", Fingerprint: "f1"}
		res, err := s.Create(ctx, e, key, 100)
		if err != nil || res.Replayed {
			t.Fatalf("create: %+v, %v", res, err)
		}
		got, err := s.Endpoint(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.URL != e.URL || got.MerchantID != "mer_a" || got.Description != "orders" || !slices.Equal(got.EnabledEvents, e.EnabledEvents) ||
			got.Status != webhooks.Enabled || !got.CreatedAt.Equal(e.CreatedAt) || string(got.Secrets.Current) != string(e.Secrets.Current) || !got.DeletedAt.IsZero() {
			t.Errorf("get: got %+v, want %+v", got, e)
		}
		other := newEndpoint("mer_a")
		replay, err := s.Create(ctx, other, key, 100)
		if err != nil || !replay.Replayed || replay.Endpoint.ID != e.ID {
			t.Errorf("replay: got %+v, %v; want the first endpoint", replay, err)
		}
		if _, err := s.Endpoint(ctx, other.ID); !errors.Is(err, webhooks.ErrEndpointNotFound) {
			t.Errorf("the replayed request's endpoint: got %v, want ErrEndpointNotFound", err)
		}
		if _, err := s.Create(ctx, other, &idempotency.Key{Merchant: "mer_a", Key: "k1", Fingerprint: "f2"}, 100); !errors.Is(err, idempotency.ErrKeyReused) {
			t.Errorf("another request under the key: got %v, want ErrKeyReused", err)
		}
		// Keys are the merchant's: another merchant's k1 is another key.
		if res, err := s.Create(ctx, newEndpoint("mer_b"), &idempotency.Key{Merchant: "mer_b", Key: "k1", Fingerprint: "f2"}, 100); err != nil || res.Replayed {
			t.Errorf("another merchant's key: got %+v, %v", res, err)
		}
	})

	t.Run("the list pages newest first, a merchant's alone, deleted ones left out", func(t *testing.T) {
		s := newStore(t)
		var ids []string
		for range 5 {
			ids = append(ids, create(t, s, newEndpoint("mer_a")).ID)
		}
		create(t, s, newEndpoint("mer_b"))
		if _, err := s.DeleteEndpoint(ctx, ids[2], at.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		list := func(q webhooks.EndpointQuery) []string {
			t.Helper()
			es, err := s.ListEndpoints(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, e := range es {
				out = append(out, e.ID)
			}
			return out
		}
		pos := func(id string) *webhooks.Position {
			e, err := s.Endpoint(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return &webhooks.Position{CreatedAt: e.CreatedAt, ID: e.ID}
		}
		for name, tt := range map[string]struct {
			q    webhooks.EndpointQuery
			want []string
		}{
			"first page":     {webhooks.EndpointQuery{MerchantID: "mer_a", Limit: 2}, []string{ids[4], ids[3]}},
			"after":          {webhooks.EndpointQuery{MerchantID: "mer_a", Limit: 2, After: pos(ids[3])}, []string{ids[1], ids[0]}},
			"before":         {webhooks.EndpointQuery{MerchantID: "mer_a", Limit: 1, Before: pos(ids[1])}, []string{ids[3]}},
			"every merchant": {webhooks.EndpointQuery{Limit: 10}, nil},
		} {
			got := list(tt.q)
			if name == "every merchant" {
				if len(got) != 5 {
					t.Errorf("%s: got %v, want the 5 endpoints not deleted", name, got)
				}
				continue
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s: got %v, want %v", name, got, tt.want)
			}
		}
	})

	t.Run("an event fans out to its merchant's subscribed endpoints only, once", func(t *testing.T) {
		s := newStore(t)
		all := create(t, s, newEndpoint("mer_a"))
		created := create(t, s, newEndpoint("mer_a", "payment.created"))
		refunds := create(t, s, newEndpoint("mer_a", "payment.refunded"))
		other := create(t, s, newEndpoint("mer_b"))
		gone := create(t, s, newEndpoint("mer_a"))
		if _, err := s.DeleteEndpoint(ctx, gone.ID, at); err != nil {
			t.Fatal(err)
		}
		_, wrote := publish(t, s, "mer_a", "payment.created")
		if wrote != 2 {
			t.Errorf("fan-out wrote %d deliveries, want 2 (every event, payment.created)", wrote)
		}
		cs := claim(t, s, 10, 10, at)
		var got []string
		for _, c := range cs {
			got = append(got, c.EndpointID)
			if c.URL == "" || string(c.Secrets.Current) == "" || c.Attempts != 0 || c.EventType != "payment.created" || len(c.Payload) == 0 {
				t.Errorf("claimed %+v: want its endpoint's URL and secret, no attempt yet, its event", c)
			}
		}
		slices.Sort(got)
		if want := []string{all.ID, created.ID}; !slices.Equal(got, want) {
			t.Errorf("claimed for %v, want %v (never %s of refunds, %s of another merchant)", got, want, refunds.ID, other.ID)
		}
		// The same event again (its id) writes nothing: the second layer.
		id, _ := publish(t, s, "mer_b", "payment.refunded")
		wrote, err := 0, error(nil)
		_, err = s.Record(ctx, inbox.Message{ID: uuid.NewString(), Type: "payment.refunded", Payload: []byte(`{}`), ReceivedAt: at, ProcessedAt: at},
			func(ctx context.Context, f webhooks.Fanout) (string, error) {
				wrote, err = f.Enqueue(ctx, webhooks.NewDelivery{MerchantID: "mer_b", EventID: id, EventType: "payment.refunded", Payload: []byte(`{}`), At: at})
				return "", err
			})
		if err != nil || wrote != 0 {
			t.Errorf("the same event fanned out again: wrote %d, %v; want 0", wrote, err)
		}
		// A fan-out whose inbox transaction rolls back leaves nothing.
		boom := errors.New("boom")
		_, err = s.Record(ctx, inbox.Message{ID: uuid.NewString(), Type: "payment.created", Payload: []byte(`{}`), ReceivedAt: at},
			func(ctx context.Context, f webhooks.Fanout) (string, error) {
				if _, err := f.Enqueue(ctx, webhooks.NewDelivery{MerchantID: "mer_b", EventID: uuid.NewString(), EventType: "payment.created", Payload: []byte(`{}`), At: at}); err != nil {
					return "", err
				}
				return "", boom
			})
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want boom", err)
		}
		if st := stats(t, s); st.Pending != 3 {
			t.Errorf("pending after a rolled back fan-out: %d, want 3", st.Pending)
		}
	})

	t.Run("a claim leases due deliveries, at most PerEndpoint of one endpoint at once", func(t *testing.T) {
		s := newStore(t)
		busy := create(t, s, newEndpoint("mer_a"))
		for range 5 {
			publish(t, s, "mer_a", "payment.created")
		}
		quiet := create(t, s, newEndpoint("mer_a"))
		publish(t, s, "mer_a", "payment.captured") // to both

		first := claim(t, s, 3, 2, at)
		byEndpoint := map[string]int{}
		for _, c := range first {
			byEndpoint[c.EndpointID]++
		}
		if byEndpoint[busy.ID] != 2 || byEndpoint[quiet.ID] != 1 {
			t.Errorf("first claim: %v, want 2 of %s (its cap) and 1 of %s", byEndpoint, busy.ID, quiet.ID)
		}
		if more := claim(t, s, 10, 2, at); len(more) != 0 {
			t.Errorf("second claim: %d, want none: busy is at its cap, quiet has nothing else", len(more))
		}
		// Once a lease passes, its delivery is claimable again: a crashed worker.
		later := claim(t, s, 10, 2, at.Add(2*time.Minute))
		if len(later) != 3 {
			t.Errorf("after the leases passed: claimed %d, want 3 (2 of busy, 1 of quiet)", len(later))
		}
		// A released lease is claimable at once, within the cap.
		if err := s.ReleaseDelivery(ctx, later[0].ID, later[0].LeaseUntil); err != nil {
			t.Fatal(err)
		}
		again := claim(t, s, 10, 2, at.Add(2*time.Minute))
		if len(again) != 1 || again[0].EndpointID != later[0].EndpointID {
			t.Errorf("after a release: claimed %+v, want one of %s", again, later[0].EndpointID)
		}
	})

	t.Run("an attempt finishes the delivery: delivered, retried, parked", func(t *testing.T) {
		s := newStore(t)
		e := create(t, s, newEndpoint("mer_a"))
		publish(t, s, "mer_a", "payment.created")
		publish(t, s, "mer_a", "payment.created")
		publish(t, s, "mer_a", "payment.created")
		cs := claim(t, s, 3, 3, at)
		if len(cs) != 3 {
			t.Fatalf("claimed %d, want 3", len(cs))
		}
		retryAt := at.Add(5 * time.Second)
		if !finish(t, s, cs[0], webhooks.Delivered, webhooks.DeliveryDelivered, time.Time{}, "") ||
			!finish(t, s, cs[1], webhooks.Failed, webhooks.DeliveryPending, retryAt, "") ||
			!finish(t, s, cs[2], webhooks.Failed, webhooks.DeliveryParked, time.Time{}, "") {
			t.Fatal("a lease was lost")
		}
		if got := claim(t, s, 10, 10, retryAt.Add(-time.Millisecond)); len(got) != 0 {
			t.Errorf("before the retry is due: claimed %d, want 0", len(got))
		}
		got := claim(t, s, 10, 10, retryAt)
		if len(got) != 1 || got[0].EventID != cs[1].EventID || got[0].Attempts != 1 {
			t.Errorf("at the retry: claimed %+v, want %s with 1 attempt", got, cs[1].EventID)
		}
		if fs := got[0].FailingSince; fs.IsZero() {
			t.Error("failing_since not set by the failure")
		}
		if st := stats(t, s); st.Parked != 1 || st.Pending != 1 || len(st.Endpoints) != 1 || st.Endpoints[0].EndpointID != e.ID || st.OldestUndelivered != time.Hour {
			t.Errorf("stats: %+v, want 1 parked, 1 pending an hour old", st)
		}
		// A lease that passed and was taken does not move the delivery.
		if held := finish(t, s, cs[1], webhooks.Delivered, webhooks.DeliveryDelivered, time.Time{}, ""); held {
			t.Error("finish with a lease no longer held: reported held")
		}
		finish(t, s, got[0], webhooks.Delivered, webhooks.DeliveryDelivered, time.Time{}, "")
		if again := claim(t, s, 10, 10, at.Add(time.Hour)); len(again) != 0 {
			t.Errorf("after delivery: claimed %d, want 0", len(again))
		}
		ep, _ := s.Endpoint(ctx, e.ID)
		if !ep.FailingSince.IsZero() {
			t.Errorf("failing_since after a delivery: %s, want cleared", ep.FailingSince)
		}
		// The attempts, newest first, page by id.
		as, err := s.Attempts(ctx, webhooks.AttemptQuery{EndpointID: e.ID, Limit: 10})
		if err != nil || len(as) != 5 {
			t.Fatalf("attempts: %d, %v; want 5", len(as), err)
		}
		for i := 1; i < len(as); i++ {
			if as[i].ID >= as[i-1].ID {
				t.Errorf("attempts not newest first: %s then %s", as[i-1].ID, as[i].ID)
			}
		}
		if as[4].Outcome != webhooks.Delivered || as[4].StatusCode != 204 || as[4].Latency != 12*time.Millisecond || as[4].EventID != cs[0].EventID || as[4].EventType != "payment.created" {
			t.Errorf("oldest attempt: %+v", as[4])
		}
		page, err := s.Attempts(ctx, webhooks.AttemptQuery{EndpointID: e.ID, Limit: 2, After: as[1].ID})
		if err != nil || len(page) != 2 || page[0].ID != as[2].ID {
			t.Errorf("attempts after %s: %+v, %v", as[1].ID, page, err)
		}
		page, err = s.Attempts(ctx, webhooks.AttemptQuery{EndpointID: e.ID, Limit: 2, Before: as[4].ID})
		if err != nil || len(page) != 2 || page[0].ID != as[2].ID || page[1].ID != as[3].ID {
			t.Errorf("attempts before %s: %+v, %v", as[4].ID, page, err)
		}
		if _, err := s.Attempt(ctx, "we_other", as[0].ID); !errors.Is(err, webhooks.ErrUnknownCursor) {
			t.Errorf("another endpoint's attempt: got %v, want ErrUnknownCursor", err)
		}
		// A parked delivery redelivered is due again.
		if err := s.Redeliver(ctx, e.ID, cs[2].EventID, at.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if re := claim(t, s, 10, 10, at.Add(2*time.Hour)); len(re) != 1 || re[0].EventID != cs[2].EventID || re[0].Attempts != 1 {
			t.Errorf("after redeliver: claimed %+v, want the parked one", re)
		}
		if err := s.Redeliver(ctx, e.ID, uuid.NewString(), at); !errors.Is(err, webhooks.ErrEventNotFound) {
			t.Errorf("redeliver of an event never sent: got %v, want ErrEventNotFound", err)
		}
	})

	t.Run("disabling cancels the endpoint's pending deliveries; deleting too", func(t *testing.T) {
		s := newStore(t)
		e := create(t, s, newEndpoint("mer_a"))
		d := create(t, s, newEndpoint("mer_b"))
		for range 3 {
			publish(t, s, "mer_a", "payment.created")
			publish(t, s, "mer_b", "payment.created")
		}
		var c webhooks.Claimed
		for _, cl := range claim(t, s, 2, 1, at) {
			if cl.EndpointID == e.ID {
				c = cl
			}
		}
		if c.ID == 0 {
			t.Fatal("no delivery of the first endpoint claimed")
		}
		finish(t, s, c, webhooks.Gone, webhooks.DeliveryCanceled, time.Time{}, "endpoint answered 410 Gone")
		ep, err := s.Endpoint(ctx, e.ID)
		if err != nil || ep.Status != webhooks.Disabled || ep.DisabledReason != "endpoint answered 410 Gone" {
			t.Errorf("after a 410: %+v, %v; want disabled with the reason", ep, err)
		}
		if _, wrote := publish(t, s, "mer_a", "payment.created"); wrote != 0 {
			t.Errorf("a disabled endpoint was fanned out to: %d", wrote)
		}
		if _, err := s.DeleteEndpoint(ctx, d.ID, at.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		again, err := s.DeleteEndpoint(ctx, d.ID, at.Add(time.Hour))
		if err != nil || !again.DeletedAt.Equal(at.Add(time.Minute)) {
			t.Errorf("deleted twice: %+v, %v; want the first deletion's time", again, err)
		}
		if got := claim(t, s, 10, 10, at.Add(time.Hour)); len(got) != 0 {
			t.Errorf("claimed %d of a disabled and a deleted endpoint, want 0", len(got))
		}
		if st := stats(t, s); st.Pending != 0 {
			t.Errorf("pending of a disabled and a deleted endpoint: %d, want 0", st.Pending)
		}
		if _, err := s.RotateSecret(ctx, d.ID, []byte("new"), at); !errors.Is(err, webhooks.ErrEndpointDeleted) {
			t.Errorf("rotate a deleted endpoint: got %v, want ErrEndpointDeleted", err)
		}
		if _, err := s.DeleteEndpoint(ctx, "we_nope", at); !errors.Is(err, webhooks.ErrEndpointNotFound) {
			t.Errorf("delete unknown: got %v, want ErrEndpointNotFound", err)
		}
	})

	t.Run("a rotation keeps the replaced secret beside the new one", func(t *testing.T) {
		s := newStore(t)
		e := create(t, s, newEndpoint("mer_a"))
		r, err := s.RotateSecret(ctx, e.ID, []byte("second"), at.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if string(r.Secrets.Current) != "second" || string(r.Secrets.Previous) != string(e.Secrets.Current) || !r.Secrets.PreviousExpiresAt.Equal(at.Add(time.Hour)) {
			t.Errorf("after a rotation: %+v", r.Secrets)
		}
		publish(t, s, "mer_a", "payment.created")
		if cs := claim(t, s, 1, 1, at); len(cs) != 1 || string(cs[0].Secrets.Previous) != string(e.Secrets.Current) {
			t.Errorf("the claim's secrets: %+v, want both", cs)
		}
		if _, err := s.RotateSecret(ctx, "we_nope", []byte("x"), at); !errors.Is(err, webhooks.ErrEndpointNotFound) {
			t.Errorf("rotate unknown: got %v, want ErrEndpointNotFound", err)
		}
	})

	t.Run("a merchant has at most max endpoints not deleted", func(t *testing.T) {
		s := newStore(t)
		key := &idempotency.Key{Merchant: "mer_a", Key: "k", Fingerprint: "f"}
		first, err := s.Create(ctx, newEndpoint("mer_a"), key, 2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, newEndpoint("mer_a"), nil, 2); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, newEndpoint("mer_a"), nil, 2); !errors.Is(err, webhooks.ErrTooManyEndpoints) {
			t.Errorf("a third endpoint under a cap of 2: got %v, want ErrTooManyEndpoints", err)
		}
		if res, err := s.Create(ctx, newEndpoint("mer_a"), key, 2); err != nil || !res.Replayed || res.Endpoint.ID != first.Endpoint.ID {
			t.Errorf("a retry at the cap: got %+v, %v; want the first request's endpoint replayed", res, err)
		}
		if _, err := s.Create(ctx, newEndpoint("mer_b"), nil, 2); err != nil {
			t.Errorf("another merchant's endpoint: %v", err)
		}
		if _, err := s.DeleteEndpoint(ctx, first.Endpoint.ID, at); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, newEndpoint("mer_a"), nil, 2); err != nil {
			t.Errorf("after a deletion: %v, want room for one", err)
		}
	})

	t.Run("the claim serves the merchants in turn, each within its share", func(t *testing.T) {
		s := newStore(t)
		for range 5 { // a noisy merchant: five endpoints, ten deliveries each
			create(t, s, newEndpoint("mer_noisy"))
		}
		for range 10 {
			publish(t, s, "mer_noisy", "payment.created")
		}
		quiet := create(t, s, newEndpoint("mer_quiet"))
		for range 3 {
			publish(t, s, "mer_quiet", "payment.created")
		}
		byMerchant := func(cs []webhooks.Claimed) (noisy, q int) {
			for _, c := range cs {
				if c.EndpointID == quiet.ID {
					q++
				} else {
					noisy++
				}
			}
			return noisy, q
		}
		// One at a time, as a worker claims: the merchants alternate.
		var order []string
		for range 4 {
			cs := claimShare(t, s, 1, 4, 3, at)
			if len(cs) != 1 {
				t.Fatalf("claimed %d, want 1", len(cs))
			}
			order = append(order, map[bool]string{true: "quiet", false: "noisy"}[cs[0].EndpointID == quiet.ID])
		}
		if want := []string{"noisy", "quiet", "noisy", "quiet"}; !slices.Equal(order, want) {
			t.Errorf("claimed from %v, want the merchants in turn %v", order, want)
		}
		// The noisy merchant's share is 3: it holds 2, gets 1 more, and the
		// quiet one (holding 2, under its endpoint's cap of 4) gets the rest.
		cs := claimShare(t, s, 10, 4, 3, at)
		if noisy, q := byMerchant(cs); noisy != 1 || q != 1 {
			t.Errorf("with 2 each in flight and a share of 3: claimed %d noisy, %d quiet; want 1 and 1", noisy, q)
		}
		if more := claimShare(t, s, 10, 4, 3, at); len(more) != 0 {
			t.Errorf("both at their share: claimed %d, want 0", len(more))
		}
		// Leases that passed no longer count against the share.
		if noisy, _ := byMerchant(claimShare(t, s, 10, 4, 3, at.Add(2*time.Minute))); noisy != 3 {
			t.Errorf("after the leases passed: claimed %d noisy, want its share of 3", noisy)
		}
	})

	t.Run("an endpoint timing out has one attempt in flight until it answers", func(t *testing.T) {
		s := newStore(t)
		e := create(t, s, newEndpoint("mer_a"))
		for range 6 {
			publish(t, s, "mer_a", "payment.created")
		}
		timedOut := func(c webhooks.Claimed, timedOut bool, code int) {
			t.Helper()
			attemptID++
			a := webhooks.Attempt{ID: fmt.Sprintf("wa_%032x", attemptID), EndpointID: c.EndpointID, EventID: c.EventID, EventType: c.EventType,
				AttemptedAt: at, Latency: time.Second, Outcome: webhooks.Failed, StatusCode: code, Error: "timeout"}
			if _, err := s.FinishDelivery(ctx, webhooks.Finish{DeliveryID: c.ID, LeaseUntil: c.LeaseUntil, Attempt: a,
				Status: webhooks.DeliveryPending, NextAttemptAt: at, TimedOut: timedOut}); err != nil {
				t.Fatal(err)
			}
		}
		cs := claim(t, s, 1, 4, at)
		timedOut(cs[0], true, 0)
		if ep, _ := s.Endpoint(ctx, e.ID); ep.Timeouts != 1 {
			t.Errorf("after a timeout: timeouts %d, want 1", ep.Timeouts)
		}
		cs = claim(t, s, 10, 4, at)
		if len(cs) != 1 || cs[0].Timeouts != 1 {
			t.Fatalf("claimed %+v of an endpoint timing out; want 1, with its timeouts", cs)
		}
		timedOut(cs[0], true, 0)
		cs = claim(t, s, 10, 4, at)
		if len(cs) != 1 || cs[0].Timeouts != 2 {
			t.Fatalf("claimed %+v; want 1, with 2 timeouts", cs)
		}
		timedOut(cs[0], false, 500) // an answer, even a failing one, ends the run
		if ep, _ := s.Endpoint(ctx, e.ID); ep.Timeouts != 0 {
			t.Errorf("after an answer: timeouts %d, want 0", ep.Timeouts)
		}
		if cs := claim(t, s, 10, 4, at); len(cs) != 4 {
			t.Errorf("after an answer: claimed %d, want the cap of 4", len(cs))
		}
	})

	t.Run("recover queues the failed and parked deliveries since a time, oldest first", func(t *testing.T) {
		s := newStore(t)
		e := create(t, s, newEndpoint("mer_a"))
		// Six deliveries, each made a microsecond after the last. The
		// publish helper stamps them all at; recover reads created_at, so
		// they are made through Record at their own times.
		var events []string
		for i := range 6 {
			id := uuid.NewString()
			when := at.Add(time.Duration(i) * time.Second)
			body := fmt.Appendf(nil, `{"id":%q}`, id)
			if _, err := s.Record(ctx, inbox.Message{ID: id, Type: "payment.created", Payload: body, ReceivedAt: when, ProcessedAt: when},
				func(ctx context.Context, f webhooks.Fanout) (string, error) {
					_, err := f.Enqueue(ctx, webhooks.NewDelivery{MerchantID: "mer_a", EventID: id, EventType: "payment.created", Payload: body, At: when})
					return "", err
				}); err != nil {
				t.Fatal(err)
			}
			events = append(events, id)
		}
		now := at.Add(time.Hour)
		cs := claim(t, s, 6, 6, now)
		slices.SortFunc(cs, func(a, b webhooks.Claimed) int { return a.CreatedAt.Compare(b.CreatedAt) })
		// 0: before since; 1: parked; 2: delivered; 3: waiting for a retry;
		// 4: due again now (already queued); 5: parked.
		finish(t, s, cs[0], webhooks.Failed, webhooks.DeliveryParked, time.Time{}, "")
		finish(t, s, cs[1], webhooks.Failed, webhooks.DeliveryParked, time.Time{}, "")
		finish(t, s, cs[2], webhooks.Delivered, webhooks.DeliveryDelivered, time.Time{}, "")
		finish(t, s, cs[3], webhooks.Failed, webhooks.DeliveryPending, now.Add(time.Hour), "")
		finish(t, s, cs[4], webhooks.Failed, webhooks.DeliveryPending, now.Add(-time.Minute), "")
		finish(t, s, cs[5], webhooks.Failed, webhooks.DeliveryParked, time.Time{}, "")
		since := at.Add(time.Second)
		q := webhooks.RecoverQuery{EndpointID: e.ID, Since: since, Limit: 2, At: now}
		key := &idempotency.Key{Merchant: "mer_a", Key: "r1", Fingerprint: "f"}
		first, err := s.Recover(ctx, q, key)
		if err != nil || first.Queued != 2 || !first.HasMore || first.Last != events[3] || first.Replayed {
			t.Fatalf("first page: %+v, %v; want 2 queued (%s, %s), more", first, err, events[1], events[3])
		}
		if again, err := s.Recover(ctx, q, key); err != nil || !again.Replayed || again.Queued != 2 || again.Last != events[3] {
			t.Errorf("the same key again: %+v, %v; want the first answer replayed", again, err)
		}
		if _, err := s.Recover(ctx, webhooks.RecoverQuery{EndpointID: e.ID, Since: at, Limit: 5, At: now}, &idempotency.Key{Merchant: "mer_a", Key: "r1", Fingerprint: "f2"}); !errors.Is(err, idempotency.ErrKeyReused) {
			t.Errorf("the key with another recovery: got %v, want ErrKeyReused", err)
		}
		later := now.Add(time.Second)
		q.After, q.At = first.Last, later
		second, err := s.Recover(ctx, q, nil)
		if err != nil || second.Queued != 1 || second.HasMore || second.Last != events[5] {
			t.Errorf("second page: %+v, %v; want %s alone, no more", second, err, events[5])
		}
		// Everything it queued is due now, oldest first; 4 was due already.
		got := claim(t, s, 10, 10, later)
		var order []string
		for _, c := range got {
			order = append(order, c.EventID)
		}
		if want := []string{events[4], events[1], events[3], events[5]}; !slices.Equal(order, want) {
			t.Errorf("claimed %v, want %v: the one due already, then the recovered, oldest first", order, want)
		}
		for _, c := range got[:3] {
			finish(t, s, c, webhooks.Failed, webhooks.DeliveryPending, later, "")
		}
		// Due or in flight, they are not queued again.
		if again, err := s.Recover(ctx, webhooks.RecoverQuery{EndpointID: e.ID, Since: since, Limit: 10, At: later}, nil); err != nil || again.Queued != 0 || again.HasMore {
			t.Errorf("recover with everything queued: %+v, %v; want nothing changed", again, err)
		}
		if _, err := s.Recover(ctx, webhooks.RecoverQuery{EndpointID: e.ID, Since: since, Limit: 1, After: uuid.NewString(), At: now}, nil); !errors.Is(err, webhooks.ErrUnknownCursor) {
			t.Errorf("a cursor of no delivery: got %v, want ErrUnknownCursor", err)
		}
	})
}
