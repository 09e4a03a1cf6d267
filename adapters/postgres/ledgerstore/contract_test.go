package ledgerstore_test

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/ledgers/ledgerstest"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// TestStoreHonoursTheContract runs on the Postgres store the contracts the
// fakes pass: the ledger's (its tables in the inbox's transactions and
// savepoints, its reads) and the inbox's.
func TestStoreHonoursTheContract(t *testing.T) {
	t.Parallel()
	t.Run("ledger", func(t *testing.T) {
		ledgerstest.RunContract(t, func(t *testing.T) ledgerstest.Store {
			return ledgerstore.New(pgtest.New(t, ledgermigrations.FS))
		})
	})
	t.Run("inbox", func(t *testing.T) {
		inboxtest.RunContract(t, func(t *testing.T) inboxtest.Store[ledgers.Ledger] {
			return ledgerstore.New(pgtest.New(t, ledgermigrations.FS))
		})
	})
}
