package apikeystore_test

import (
	"os"
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/apikeystore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/access/accesstest"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestStoreHonoursTheContract(t *testing.T) {
	t.Parallel()
	accesstest.RunContract(t, func(t *testing.T) access.Store {
		return apikeystore.New(pgtest.New(t, paymentsmigrations.FS))
	})
}
