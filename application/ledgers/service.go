package ledgers

import (
	"context"
	"time"

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

// BalancesAsOf returns the balances of the account named id as the ledger
// held them at asOf (its posted, pending and available amounts then); a
// zero asOf is now. Errors: ledger.ErrInvalidAccount,
// ledger.ErrAccountNotFound, dependency.ErrUnavailable.
func (s *Service) BalancesAsOf(ctx context.Context, id string, asOf time.Time) ([]ledger.Balance, error) {
	account, err := ledger.ParseAccountID(id)
	if err != nil {
		return nil, err
	}
	return s.balances(ctx, account, asOf)
}

// MerchantBalances returns merchant merchantID's balances, available and
// pending, one per currency, at asOf (zero: now). merchantID is the
// merchant's id, as the payments service names it, not an account name.
// Errors: ledger.ErrInvalidAccount, ledger.ErrAccountNotFound,
// dependency.ErrUnavailable.
func (s *Service) MerchantBalances(ctx context.Context, merchantID string, asOf time.Time) ([]ledger.Balance, error) {
	account, err := ledger.MerchantAccount(merchantID)
	if err != nil {
		return nil, err
	}
	return s.balances(ctx, account, asOf)
}

func (s *Service) balances(ctx context.Context, account ledger.AccountID, asOf time.Time) ([]ledger.Balance, error) {
	if asOf.IsZero() {
		return s.reader.Balances(ctx, account)
	}
	return s.reader.BalancesAsOf(ctx, account, asOf)
}

// Entries returns the ledger transactions of payment id with their entries.
// paymentID must be a canonical UUID (the HTTP adapter checks its syntax).
// Errors: ledger.ErrPaymentNotFound, dependency.ErrUnavailable.
func (s *Service) Entries(ctx context.Context, paymentID string) ([]ledger.Transaction, error) {
	return s.reader.PaymentTransactions(ctx, paymentID)
}
