package posting_test

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/application/posting/postingtest"
)

func TestMemStoreHonoursTheContract(t *testing.T) {
	postingtest.Run(t, func(*testing.T) postingtest.Store { return newMemStore() })
}
