package webhookstore_test

import (
	"os"
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/webhookstore"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
	"github.com/payments-outbox/payments-outbox/application/webhooks/webhookstest"
	webhooksmigrations "github.com/payments-outbox/payments-outbox/migrations/webhooks"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestStoreHonoursTheContract runs on Postgres the contracts the fakes
// pass: the webhooks store's and the shared inbox's.
func TestStoreHonoursTheContract(t *testing.T) {
	t.Parallel()
	t.Run("webhooks", func(t *testing.T) {
		webhookstest.RunContract(t, func(t *testing.T) webhookstest.Store {
			return webhookstore.New(pgtest.New(t, webhooksmigrations.FS))
		})
	})
	t.Run("inbox", func(t *testing.T) {
		inboxtest.RunContract(t, func(t *testing.T) inboxtest.Store[webhooks.Fanout] {
			return webhookstore.New(pgtest.New(t, webhooksmigrations.FS))
		})
	})
}
