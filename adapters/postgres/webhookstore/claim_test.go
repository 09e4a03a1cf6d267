package webhookstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/webhookstore"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
	webhooksmigrations "github.com/payments-outbox/payments-outbox/migrations/webhooks"
)

// TestTheShareHoldsAcrossConcurrentClaims: many workers claiming at once,
// as many replicas' do, never lease more of one merchant's deliveries than
// its share, nor of one endpoint's than its cap. The claim counts a
// merchant's leases only under its row lock, in a statement whose snapshot
// sees every lease committed before the lock was granted; counted in the
// statement that takes the lock, a claim could see a stale count.
func TestTheShareHoldsAcrossConcurrentClaims(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, webhooksmigrations.FS)
	s := webhookstore.New(pool)
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Microsecond)
	for i := range 6 {
		e := webhooks.StoredEndpoint{Endpoint: webhooks.Endpoint{ID: fmt.Sprintf("we_%032x", i+1), MerchantID: "mer_noisy", URL: "https://example.com/h",
			EnabledEvents: []string{webhooks.AllEvents}, Status: webhooks.Enabled, CreatedAt: at}, Secrets: webhooks.SealedSecrets{Current: []byte("s")}}
		if _, err := s.Create(ctx, e, nil, 100); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		id := uuid.NewString()
		if _, err := s.Record(ctx, inbox.Message{ID: id, Type: "payment.created", Payload: []byte(`{}`), ReceivedAt: at, ProcessedAt: at},
			func(ctx context.Context, f webhooks.Fanout) (string, error) {
				_, err := f.Enqueue(ctx, webhooks.NewDelivery{MerchantID: "mer_noisy", EventID: id, EventType: "payment.created", Payload: []byte(`{}`), At: at})
				return "", err
			}); err != nil {
			t.Fatal(err)
		}
	}
	const share, perEndpoint, workers = 5, 2, 24
	for round := range 3 {
		now := at.Add(time.Duration(round) * time.Hour) // each round's leases have passed by the next
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			leased []webhooks.Claimed
		)
		start := make(chan struct{})
		for range workers {
			wg.Go(func() {
				<-start
				cs, err := s.ClaimDeliveries(ctx, webhooks.DeliveryClaim{Limit: 1, PerEndpoint: perEndpoint, PerMerchant: share, At: now, LeaseUntil: now.Add(time.Minute)})
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				leased = append(leased, cs...)
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
		byEndpoint := map[string]int{}
		for _, c := range leased {
			byEndpoint[c.EndpointID]++
		}
		if len(leased) > share {
			t.Errorf("round %d: %d workers at once leased %d of the merchant's deliveries, over its share of %d", round, workers, len(leased), share)
		}
		for e, n := range byEndpoint {
			if n > perEndpoint {
				t.Errorf("round %d: %d of endpoint %s leased at once, over its cap of %d", round, n, e, perEndpoint)
			}
		}
		var held int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE locked_until > $1`, now).Scan(&held); err != nil {
			t.Fatal(err)
		}
		if held > share {
			t.Errorf("round %d: %d leases held, over the share of %d", round, held, share)
		}
	}
}
