package webhookstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

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
		res, err := s.Create(ctx, e, nil, e.Secrets.Current)
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
	claim := func(t *testing.T, s Store, limit, per int, when time.Time) []webhooks.Claimed {
		t.Helper()
		cs, err := s.ClaimDeliveries(ctx, webhooks.DeliveryClaim{Limit: limit, PerEndpoint: per, At: when, LeaseUntil: when.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		return cs
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
		key := &webhooks.IdempotencyKey{Merchant: "mer_a", Key: "k1", Fingerprint: "f1"}
		res, err := s.Create(ctx, e, key, []byte("answered"))
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
		replay, err := s.Create(ctx, other, key, []byte("other"))
		if err != nil || !replay.Replayed || replay.Endpoint.ID != e.ID || string(replay.Answered) != "answered" {
			t.Errorf("replay: got %+v, %v; want the first endpoint and its answer", replay, err)
		}
		if _, err := s.Endpoint(ctx, other.ID); !errors.Is(err, webhooks.ErrEndpointNotFound) {
			t.Errorf("the replayed request's endpoint: got %v, want ErrEndpointNotFound", err)
		}
		if _, err := s.Create(ctx, other, &webhooks.IdempotencyKey{Merchant: "mer_a", Key: "k1", Fingerprint: "f2"}, []byte("x")); !errors.Is(err, webhooks.ErrKeyReused) {
			t.Errorf("another request under the key: got %v, want ErrKeyReused", err)
		}
		// Keys are the merchant's: another merchant's k1 is another key.
		if res, err := s.Create(ctx, newEndpoint("mer_b"), &webhooks.IdempotencyKey{Merchant: "mer_b", Key: "k1", Fingerprint: "f2"}, []byte("b")); err != nil || res.Replayed {
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
}
