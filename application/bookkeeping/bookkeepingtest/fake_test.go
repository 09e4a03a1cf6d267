package bookkeepingtest_test

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/application/bookkeeping"
	"github.com/payments-outbox/payments-outbox/application/bookkeeping/bookkeepingtest"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
)

// TestFakeHonoursTheContract keeps the fake honest: it must pass the same
// contracts as the Postgres store, the ledger's and the inbox's, or the
// bookkeeping tests that use it would prove nothing.
func TestFakeHonoursTheContract(t *testing.T) {
	bookkeepingtest.RunContract(t, func(*testing.T) bookkeepingtest.Store { return bookkeepingtest.NewFakeStore() })
	inboxtest.RunContract(t, func(*testing.T) inboxtest.Store[bookkeeping.Ledger] { return bookkeepingtest.NewFakeStore() })
}
