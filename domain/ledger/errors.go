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

	// ErrOutOfOrder means an event came ahead of one it depends on: a
	// capture or cancellation before the authorization that placed its
	// hold, a refund before its payment or its capture. Delivery is
	// unordered, so the other may still be on its way: the inbox retries
	// it, and parks it only when its attempts run out.
	ErrOutOfOrder = errors.New("ahead of the event it depends on")

	// The refusals below mean the ledger was told something that contradicts
	// what it knows of the payment. Retrying would repeat them: the message
	// is parked, with the reason, for an operator.

	// ErrNoHold means a capture or cancellation names a payment captured at
	// once, which never had a hold.
	ErrNoHold = errors.New("payment has no hold")
	// ErrHoldReleased means the hold was already captured or canceled: a
	// second capture, a capture after a cancellation, a cancellation after
	// a capture.
	ErrHoldReleased = errors.New("hold already released")
	// ErrCaptureExceedsHold means a capture of more than the open hold.
	ErrCaptureExceedsHold = errors.New("capture exceeds the hold")
	// ErrRefundExceedsCaptured means the payment's refunds would pass what
	// was captured (posted) for it.
	ErrRefundExceedsCaptured = errors.New("refund exceeds what was captured")
	// ErrCurrencyMismatch means an event names another currency than the
	// payment's.
	ErrCurrencyMismatch = errors.New("currency differs from the payment's")
	// ErrUnknownCurrency means an amount's currency is no active ISO 4217
	// currency: the ledger never posts it.
	ErrUnknownCurrency = errors.New("unknown currency")
	// ErrPaymentConflict means an event would start a payment the ledger
	// already knows otherwise: an authorization of a payment captured at
	// once, or of another amount.
	ErrPaymentConflict = errors.New("payment already known otherwise")
)
