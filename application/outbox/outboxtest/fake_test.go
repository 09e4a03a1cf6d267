package outboxtest_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox/outboxtest"
)

// TestFakeHonoursTheContract keeps the fake honest: it must pass the same
// contract as the Postgres store, or the relay's tests that use it would
// prove nothing.
func TestFakeHonoursTheContract(t *testing.T) {
	t.Parallel()
	outboxtest.RunContract(t, func(t *testing.T) outboxtest.Harness {
		s := outboxtest.NewFakeStore(nil)
		return outboxtest.Harness{
			Store:  s,
			Insert: func(t *testing.T, n int) []uuid.UUID { return s.Add(n, "payment.created") },
			State: func(t *testing.T, id uuid.UUID) (string, int) {
				r := s.Row(id)
				return r.Status, r.Message.Attempts
			},
		}
	})
}
