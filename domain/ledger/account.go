package ledger

import (
	"fmt"
	"unicode/utf8"
)

// maxAccountLen bounds account ids so that a hostile event cannot bloat the
// ledger's indexes; payer and merchant ids are short opaque strings.
const maxAccountLen = 255

// AccountID names a ledger account: a payer or merchant id as the payments
// service sends it. The zero value is invalid.
type AccountID struct {
	id string
}

// NewAccountID validates s as an account id: non-empty valid UTF-8 of at most
// 255 bytes, without control characters.
func NewAccountID(s string) (AccountID, error) {
	if s == "" || len(s) > maxAccountLen || !utf8.ValidString(s) {
		return AccountID{}, fmt.Errorf("%w: %q", ErrInvalidAccount, s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return AccountID{}, fmt.Errorf("%w: %q has a control character", ErrInvalidAccount, s)
		}
	}
	return AccountID{id: s}, nil
}

// String returns the id as given.
func (a AccountID) String() string { return a.id }

// ValidCurrency reports whether code looks like an ISO 4217 code: three
// upper-case ASCII letters. The ledger deliberately does not keep its own list
// of active currencies: the payments service owns that rule, and a ledger that
// rejected a currency the payments service accepted would dead-letter real money.
func ValidCurrency(code string) bool {
	if len(code) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if code[i] < 'A' || code[i] > 'Z' {
			return false
		}
	}
	return true
}

// Balance is the sum of an account's entries in one currency: positive when
// the account has received more than it paid (a merchant), negative for a
// payer. It is a read model computed from entries, never stored on its own.
type Balance struct {
	account  AccountID
	currency string
	amount   int64
}

// RehydrateBalance rebuilds a Balance that storage summed from entries. It
// trusts its input: the entries were validated when they were posted.
func RehydrateBalance(account AccountID, currency string, amount int64) Balance {
	return Balance{account: account, currency: currency, amount: amount}
}

// Account returns the account the balance belongs to.
func (b Balance) Account() AccountID { return b.account }

// Currency returns the ISO 4217 code of the balance.
func (b Balance) Currency() string { return b.currency }

// Amount returns the signed balance in minor units.
func (b Balance) Amount() int64 { return b.amount }
