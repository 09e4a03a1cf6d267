package paymentmodel_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// publisherFunc is a relay publisher made of a function: one error per
// message, nil for each one delivered.
type publisherFunc func(ctx context.Context, msgs []outbox.Message) []error

func (f publisherFunc) Publish(ctx context.Context, msgs []outbox.Message) []error {
	return f(ctx, msgs)
}

// newDrain returns a function that publishes every due outbox row of the
// payments database pool with publish, through the real relay and its real
// claim, a batch of batchSize rows at a time, and returns how many rows it
// claimed. It is the only place this test names the relay, so that a change
// of the relay's package or constructor is one edit here. A row whose
// publish failed stays PENDING for its backoff: the caller checks the
// outbox after a drain.
func newDrain(t *testing.T, pool *pgxpool.Pool, batchSize int, publish publisherFunc) func(context.Context) (int, error) {
	t.Helper()
	r := outbox.NewRelay(outboxstore.New(pool), publish, logtest.Discard(), nil, time.Now,
		outbox.Config{BatchSize: batchSize, Workers: 1})
	return func(ctx context.Context) (int, error) {
		total := 0
		for {
			n, err := r.Step(ctx)
			total += n
			if err != nil || n == 0 {
				return total, err
			}
		}
	}
}
