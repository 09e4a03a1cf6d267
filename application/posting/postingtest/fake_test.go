package postingtest_test

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/application/posting/postingtest"
)

// TestFakeHonoursTheContract keeps the fake honest: it must pass the same
// contract as the Postgres store, or the posting tests that use it would
// prove nothing.
func TestFakeHonoursTheContract(t *testing.T) {
	postingtest.RunContract(t, func(*testing.T) postingtest.Store { return postingtest.NewFakeStore() })
}
