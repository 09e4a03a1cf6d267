package inboxstore_test

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/inboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// newStore is the inbox of a consumer that writes no table of its own, on
// the ledger's database: the one whose migrations create the inbox table.
func newStore(pool *pgxpool.Pool) *inboxstore.Store[struct{}] {
	return inboxstore.New(pool, func(inboxstore.Tx) struct{} { return struct{}{} })
}

// TestStoreHonoursTheContract runs the inbox's contract on the Postgres
// inbox alone, without any consumer's tables: what every consumer's store
// (ledgerstore, which runs it too) builds on.
func TestStoreHonoursTheContract(t *testing.T) {
	t.Parallel()
	inboxtest.RunContract(t, func(t *testing.T) inboxtest.Store[struct{}] {
		return newStore(pgtest.New(t, ledgermigrations.FS))
	})
}
