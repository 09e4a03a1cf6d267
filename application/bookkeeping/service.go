package bookkeeping

import (
	"context"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// Service answers the ledger's queries: what the read API serves.
type Service struct {
	reader Reader
}

// NewService returns a Service reading through reader.
func NewService(reader Reader) *Service {
	return &Service{reader: reader}
}

// Balances returns the balances of the account named id, one per currency.
// id is the account's canonical name (ledger.ParseAccountID):
// "merchant:mer_1", "payer:mer_1:cus_1".
// Errors: ledger.ErrInvalidAccount, ledger.ErrAccountNotFound, dependency.ErrUnavailable.
func (s *Service) Balances(ctx context.Context, id string) ([]ledger.Balance, error) {
	account, err := ledger.ParseAccountID(id)
	if err != nil {
		return nil, err
	}
	return s.reader.Balances(ctx, account)
}

// Entries returns the ledger transactions of payment id with their entries.
// paymentID must be a canonical UUID (the HTTP adapter checks its syntax).
// Errors: ledger.ErrPaymentNotFound, dependency.ErrUnavailable.
func (s *Service) Entries(ctx context.Context, paymentID string) ([]ledger.Transaction, error) {
	return s.reader.PaymentTransactions(ctx, paymentID)
}
