package paymentstest

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/application/payments"
)

func TestFakeRepository(t *testing.T) {
	RepositoryContract(t, func(*testing.T) payments.Repository { return NewRepository() })
}
