package ledger

import "errors"

// Sentinel errors, matched with errors.Is by the application and the HTTP adapter.
var (
	// ErrInvalidTransaction means the values given cannot form a balanced,
	// well-identified ledger transaction. A message that produces it will never
	// post, however often it is retried.
	ErrInvalidTransaction = errors.New("invalid ledger transaction")
	// ErrInvalidAccount means an owner id cannot name an account (empty, too
	// long, not UTF-8, a control character), or a name is not an account's
	// canonical name.
	ErrInvalidAccount = errors.New("invalid account id")
	// ErrAccountNotFound means no entry was ever posted to the account.
	ErrAccountNotFound = errors.New("account not found")
	// ErrPaymentNotFound means no ledger transaction refers to the payment.
	ErrPaymentNotFound = errors.New("payment not found in ledger")
	// ErrBalanceLimit means a posting would take an account's balance past
	// what int64 holds. Storage refuses it, and it would be refused again on
	// every retry: the message is parked with the reason for an operator.
	ErrBalanceLimit = errors.New("balance limit")
)
