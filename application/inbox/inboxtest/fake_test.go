package inboxtest_test

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
)

// TestFakeHonoursTheContract keeps the fake honest: it must pass the same
// contract as the Postgres store, or the inbox tests that use it would prove
// nothing.
func TestFakeHonoursTheContract(t *testing.T) {
	inboxtest.RunContract(t, func(*testing.T) inboxtest.Store[struct{}] {
		return inboxtest.NewFakeStore(inboxtest.NoTables{})
	})
}
