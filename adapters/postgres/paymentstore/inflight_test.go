package paymentstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/payments"
)

// TestATwinInFlightIsRefused: while the first request with a key is inside
// its transaction — it holds the key and waits to write the key's row — a
// twin with the same key and request is refused at once with
// ErrKeyInFlight, not made to wait; once the first commits, the twin's
// retry replays its answer. The overlap is made certain by holding the
// idempotency_keys table against writes, never by a sleep.
func TestATwinInFlightIsRefused(t *testing.T) {
	t.Parallel()
	writes := []struct {
		name string
		do   func(ctx context.Context, svc *payments.Service, authorized *payments.Committed) (payments.Committed, error)
	}{
		{"create", func(ctx context.Context, svc *payments.Service, _ *payments.Committed) (payments.Committed, error) {
			c := manualPayment
			c.IdempotencyKey = "create-1"
			return svc.Create(ctx, c)
		}},
		{"capture", func(ctx context.Context, svc *payments.Service, authorized *payments.Committed) (payments.Committed, error) {
			return svc.Capture(ctx, payments.CapturePayment{Principal: platform, PaymentID: authorized.Payment.ID(), IdempotencyKey: "capture-1"})
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			svc, pool := newService(t)
			ctx := context.Background()
			authorized, err := svc.Create(ctx, manualPayment)
			if err != nil {
				t.Fatal(err)
			}
			hold := pgtest.HoldWrites(t, pool, "idempotency_keys")
			first := make(chan error, 1)
			go func() {
				_, err := w.do(ctx, svc, &authorized)
				first <- err
			}()
			hold.AwaitWriter(t)
			// Bounded so that a twin made to wait fails the test rather
			// than hanging it: the refusal takes a round trip.
			tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_, err = w.do(tctx, svc, &authorized)
			cancel()
			if !errors.Is(err, idempotency.ErrKeyInFlight) {
				t.Fatalf("the twin while the first holds the key: %v, want ErrKeyInFlight", err)
			}
			hold.Release(t)
			if err := <-first; err != nil {
				t.Fatalf("the first request: %v", err)
			}
			if again, err := w.do(ctx, svc, &authorized); err != nil || !again.Replayed {
				t.Errorf("the twin's retry after the first committed: replayed=%v, %v; want the first answer replayed", again.Replayed, err)
			}
		})
	}
}
