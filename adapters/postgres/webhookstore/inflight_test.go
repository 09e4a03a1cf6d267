package webhookstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/webhookstore"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
	webhooksmigrations "github.com/payments-outbox/payments-outbox/migrations/webhooks"
)

// TestATwinInFlightIsRefused: while the first request with a key is inside
// its transaction — it holds the key and waits to write the key's row — a
// twin with the same key and request is refused at once with
// ErrKeyInFlight, as the payments store refuses one, not made to wait;
// once the first commits, the twin's retry replays its answer. The overlap
// is made certain by holding webhook_idempotency_keys against writes, never
// by a sleep.
func TestATwinInFlightIsRefused(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var n atomic.Int64
	endpoint := func() webhooks.StoredEndpoint {
		i := n.Add(1)
		return webhooks.StoredEndpoint{Endpoint: webhooks.Endpoint{
			ID: fmt.Sprintf("we_%032x", i), MerchantID: "mer_a", URL: "https://example.com/hook",
			EnabledEvents: []string{webhooks.AllEvents}, Status: webhooks.Enabled, CreatedAt: at,
		}, Secrets: webhooks.SealedSecrets{Current: []byte("sealed")}}
	}
	writes := []struct {
		name string
		do   func(ctx context.Context, s *webhookstore.Store, existing string, key *idempotency.Key) (replayed bool, err error)
	}{
		{"create", func(ctx context.Context, s *webhookstore.Store, _ string, key *idempotency.Key) (bool, error) {
			res, err := s.Create(ctx, endpoint(), key, 100)
			return res.Replayed, err
		}},
		{"recover", func(ctx context.Context, s *webhookstore.Store, existing string, key *idempotency.Key) (bool, error) {
			res, err := s.Recover(ctx, webhooks.RecoverQuery{EndpointID: existing, Since: at, Limit: 10, At: at}, key)
			return res.Replayed, err
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.New(t, webhooksmigrations.FS)
			s := webhookstore.New(pool)
			ctx := context.Background()
			existing := endpoint()
			if _, err := s.Create(ctx, existing, nil, 100); err != nil {
				t.Fatal(err)
			}
			key := &idempotency.Key{Merchant: "mer_a", Key: "k-" + w.name, Fingerprint: "f"}
			hold := pgtest.HoldWrites(t, pool, "webhook_idempotency_keys")
			first := make(chan error, 1)
			go func() {
				_, err := w.do(ctx, s, existing.ID, key)
				first <- err
			}()
			hold.AwaitWriter(t)
			// Bounded so that a twin made to wait fails the test rather
			// than hanging it: the refusal takes a round trip.
			tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_, err := w.do(tctx, s, existing.ID, key)
			cancel()
			if !errors.Is(err, idempotency.ErrKeyInFlight) {
				t.Fatalf("the twin while the first holds the key: %v, want ErrKeyInFlight", err)
			}
			hold.Release(t)
			if err := <-first; err != nil {
				t.Fatalf("the first request: %v", err)
			}
			if replayed, err := w.do(ctx, s, existing.ID, key); err != nil || !replayed {
				t.Errorf("the twin's retry after the first committed: replayed=%v, %v; want the first answer replayed", replayed, err)
			}
		})
	}
}
