package ledgerstore_test

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/posting/postingtest"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

func TestStoreHonoursTheContract(t *testing.T) {
	t.Parallel()
	postingtest.RunContract(t, func(t *testing.T) postingtest.Store {
		return ledgerstore.New(pgtest.New(t, ledgermigrations.FS))
	})
}
