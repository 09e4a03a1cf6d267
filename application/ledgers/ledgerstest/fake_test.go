package ledgerstest_test

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/ledgers/ledgerstest"
)

// TestFakeHonoursTheContract keeps the fake honest: it must pass the same
// contracts as the Postgres store, the ledger's and the inbox's, or the
// ledgers tests that use it would prove nothing.
func TestFakeHonoursTheContract(t *testing.T) {
	ledgerstest.RunContract(t, func(*testing.T) ledgerstest.Store { return ledgerstest.NewFakeStore() })
	inboxtest.RunContract(t, func(*testing.T) inboxtest.Store[ledgers.Ledger] { return ledgerstest.NewFakeStore() })
}
