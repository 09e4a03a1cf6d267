package relaytest_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/relay/relaytest"
)

// TestFakeHonoursTheContract keeps the fake honest: it must pass the same
// contract as the Postgres store, or the relay's tests that use it would
// prove nothing.
func TestFakeHonoursTheContract(t *testing.T) {
	t.Parallel()
	relaytest.RunContract(t, func(t *testing.T) relaytest.Harness {
		s := relaytest.NewFakeStore(nil)
		return relaytest.Harness{
			Store:  s,
			Insert: func(t *testing.T, n int) []uuid.UUID { return s.Add(n, "payment.created") },
			InsertFor: func(t *testing.T, agg uuid.UUID, n int) []uuid.UUID {
				return s.AddFor(agg, n, "payment.created")
			},
			State: func(t *testing.T, id uuid.UUID) (string, int) {
				r := s.Row(id)
				return r.Status, r.Message.Attempts
			},
		}
	})
}
