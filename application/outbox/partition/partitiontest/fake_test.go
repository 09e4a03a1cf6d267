package partitiontest_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox/partition/partitiontest"
)

// TestFakeHonoursTheContract keeps the fake honest: it must pass the same
// contract as the Postgres store, or ordered mode's tests that use it would
// prove nothing.
func TestFakeHonoursTheContract(t *testing.T) {
	t.Parallel()
	partitiontest.RunContract(t, func(t *testing.T) partitiontest.Harness {
		s := partitiontest.NewFakeStore(nil)
		return partitiontest.Harness{
			Store: s,
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
