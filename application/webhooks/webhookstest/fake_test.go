package webhookstest_test

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/application/webhooks/webhookstest"
)

func TestFakeStoreContract(t *testing.T) {
	webhookstest.RunContract(t, func(*testing.T) webhookstest.Store { return webhookstest.NewFakeStore() })
}
