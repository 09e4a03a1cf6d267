package paymentstest_test

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/payments/paymentstest"
)

// TestFakeHonoursTheContract keeps the fake honest: it must pass the same
// contract as the Postgres repository, or the use cases' tests that use it
// would prove nothing.
func TestFakeHonoursTheContract(t *testing.T) {
	paymentstest.RunContract(t, func(*testing.T) payments.Repository { return paymentstest.NewFakeRepository() })
}
