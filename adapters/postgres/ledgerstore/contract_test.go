package ledgerstore_test

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/bookkeeping"
	"github.com/payments-outbox/payments-outbox/application/bookkeeping/bookkeepingtest"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// TestStoreHonoursTheContract runs on the Postgres store the contracts the
// fakes pass: the ledger's (its tables in the inbox's transactions and
// savepoints, its reads) and the inbox's.
func TestStoreHonoursTheContract(t *testing.T) {
	t.Parallel()
	t.Run("ledger", func(t *testing.T) {
		bookkeepingtest.RunContract(t, func(t *testing.T) bookkeepingtest.Store {
			return ledgerstore.New(pgtest.New(t, ledgermigrations.FS))
		})
	})
	t.Run("inbox", func(t *testing.T) {
		inboxtest.RunContract(t, func(t *testing.T) inboxtest.Store[bookkeeping.Ledger] {
			return ledgerstore.New(pgtest.New(t, ledgermigrations.FS))
		})
	})
}
