package accesstest_test

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/access/accesstest"
)

func TestFakeStoreHonoursTheContract(t *testing.T) {
	accesstest.RunContract(t, func(*testing.T) access.Store { return accesstest.NewFakeStore() })
}
