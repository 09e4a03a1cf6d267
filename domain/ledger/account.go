package ledger

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxPartLen bounds each part of an account id (a merchant or payer id), so
// that a hostile event cannot bloat the ledger's indexes; the ids are short
// opaque strings.
const maxPartLen = 255

// Role is what an account is for in the ledger's chart of accounts
// (docs/LEDGER.md). The set is closed: the roles below are the only ones,
// and each names the parties of a fact that own an account of it. A new role
// (a merchant's dispute reserve, a fee account) is a constant and a line in
// roles; the names storage holds do not change, and a kind's Postings can
// name it at once.
type Role uint8

// The roles. The zero Role is invalid.
const (
	// RoleMerchant is a merchant's account: what its payers paid it, less
	// what it refunded. Owned by the merchant alone.
	RoleMerchant Role = iota + 1
	// RolePayer is a payer as one merchant knows it, like a customer of one
	// Stripe account: owned by the merchant and the payer id. The same payer
	// id at another merchant is another account, so no merchant can name an
	// account that another merchant's payments move.
	RolePayer
)

// party is one of the parties of a fact, as a posting names them: an owner
// of the accounts the fact moves money on.
type party uint8

const (
	// theMerchant is the merchant: Parties.Merchant, which the payments
	// service takes from the API key that created the payment.
	theMerchant party = iota + 1
	// thePayer is the payer as the merchant named it: Parties.Payer.
	thePayer
)

// of returns the party's id among ps.
func (p party) of(ps Parties) string {
	if p == theMerchant {
		return ps.Merchant
	}
	return ps.Payer
}

// String names the party's id in error messages and forms: "merchant id".
func (p party) String() string {
	if p == theMerchant {
		return "merchant id"
	}
	return "payer id"
}

// roleSpec is a role's canonical name and the parties that own its
// accounts, in the order they appear in the account's name.
type roleSpec struct {
	name   string
	owners []party
}

var roles = [...]roleSpec{
	RoleMerchant: {name: "merchant", owners: []party{theMerchant}},
	RolePayer:    {name: "payer", owners: []party{theMerchant, thePayer}},
}

// maxOwners is the most owners a role has: the length of AccountID.owners.
const maxOwners = 2

func (r Role) spec() (roleSpec, bool) {
	if r == 0 || int(r) >= len(roles) {
		return roleSpec{}, false
	}
	return roles[r], true
}

// Roles returns every role, in the order they were declared: what the
// ledger API's pattern of account names must admit.
func Roles() []Role {
	out := make([]Role, 0, len(roles)-1)
	for r := Role(1); int(r) < len(roles); r++ {
		out = append(out, r)
	}
	return out
}

// String returns the role's canonical name, the first part of its accounts'
// names: "merchant", "payer".
func (r Role) String() string {
	if s, ok := r.spec(); ok {
		return s.name
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// Form describes the names of the role's accounts, each owner by what it
// is: "merchant:<merchant_id>", "payer:<merchant_id>:<payer_id>". Error
// messages and documents show it; "" for an invalid role.
func (r Role) Form() string {
	s, ok := r.spec()
	if !ok {
		return ""
	}
	var b strings.Builder
	b.WriteString(s.name)
	for _, o := range s.owners {
		b.WriteString(":<" + strings.ReplaceAll(o.String(), " ", "_") + ">")
	}
	return b.String()
}

// Parties are who a fact is between, as the payments service names them:
// the owners of every account a posting moves money on. A role takes from
// them the owners it names (RoleMerchant the merchant, RolePayer the
// merchant and the payer), never an account's name from an event.
type Parties struct {
	// Merchant is the merchant's id, which the payments service takes from
	// the API key that created the payment: no merchant can name another.
	Merchant string
	// Payer is the payer's id as the merchant named it: free text, which
	// is why it only ever names an account of that merchant's.
	Payer string
}

// Account returns the account of role r that ps own. Errors:
// ErrInvalidAccount (an invalid role, or an owner id that cannot name an
// account).
func (r Role) Account(ps Parties) (AccountID, error) {
	s, ok := r.spec()
	if !ok {
		return AccountID{}, fmt.Errorf("%w: %s", ErrInvalidAccount, r)
	}
	owners := make([]string, len(s.owners))
	for i, o := range s.owners {
		owners[i] = o.of(ps)
	}
	return newAccount(r, owners...)
}

// AccountID names a ledger account: a role and its owners. It is a
// comparable value; the zero value is invalid. The ledger builds accounts
// from who the payments service says the parties are — the merchant from the
// API key that created the payment, the payer as that merchant names it —
// never from an account name in an event.
type AccountID struct {
	role   Role
	owners [maxOwners]string // the role's owners in order, unused ones empty
}

// MerchantAccount returns the account of merchant merchantID. The id must be
// non-empty valid UTF-8 of at most 255 bytes, without control characters.
// Errors: ErrInvalidAccount.
func MerchantAccount(merchantID string) (AccountID, error) {
	return RoleMerchant.Account(Parties{Merchant: merchantID})
}

// PayerAccount returns the account of payer payerID as merchant merchantID
// knows it. Each id must be non-empty valid UTF-8 of at most 255 bytes,
// without control characters. Errors: ErrInvalidAccount.
func PayerAccount(merchantID, payerID string) (AccountID, error) {
	return RolePayer.Account(Parties{Merchant: merchantID, Payer: payerID})
}

func newAccount(r Role, owners ...string) (AccountID, error) {
	spec, ok := r.spec()
	if !ok || len(owners) != len(spec.owners) {
		return AccountID{}, fmt.Errorf("%w: role %s with %d owners", ErrInvalidAccount, r, len(owners))
	}
	a := AccountID{role: r}
	for i, o := range owners {
		if err := checkPart(o); err != nil {
			return AccountID{}, fmt.Errorf("%w: %s account: %s %w", ErrInvalidAccount, spec.name, spec.owners[i], err)
		}
		a.owners[i] = o
	}
	return a, nil
}

// checkPart checks one owner id: non-empty valid UTF-8 of at most 255
// bytes, without control characters. The error it returns completes a
// sentence naming the part.
func checkPart(s string) error {
	switch {
	case s == "":
		return errors.New("is empty")
	case len(s) > maxPartLen:
		return fmt.Errorf("is %d bytes, over %d", len(s), maxPartLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%q is not valid UTF-8", s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%q has a control character", s)
		}
	}
	return nil
}

// ParseAccountID reads an account's canonical name, as String writes it:
// "merchant:<merchant>" or "payer:<merchant>:<payer>", each part
// percent-encoded. Only the canonical form is accepted (no lower-case hex, no
// escape of a character that needs none), so that one account has exactly
// one name. Errors: ErrInvalidAccount.
func ParseAccountID(s string) (AccountID, error) {
	fields := strings.Split(s, ":")
	var r Role
	for i := range roles {
		if Role(i) != 0 && roles[i].name == fields[0] {
			r = Role(i)
		}
	}
	spec, ok := r.spec()
	if !ok {
		var names []string
		for _, r := range Roles() {
			names = append(names, r.String()+":")
		}
		return AccountID{}, fmt.Errorf("%w: %q does not start with a role (%s)", ErrInvalidAccount, s, strings.Join(names, ", "))
	}
	if len(fields)-1 != len(spec.owners) {
		return AccountID{}, fmt.Errorf("%w: %q: a %s account is %s", ErrInvalidAccount, s, spec.name, r.Form())
	}
	owners := make([]string, len(fields)-1)
	for i, f := range fields[1:] {
		o, ok := unescapePart(f)
		if !ok {
			return AccountID{}, fmt.Errorf("%w: %q: %s %q is not percent-encoded", ErrInvalidAccount, s, spec.owners[i], f)
		}
		owners[i] = o
	}
	a, err := newAccount(r, owners...)
	if err != nil {
		return AccountID{}, err
	}
	if a.String() != s {
		return AccountID{}, fmt.Errorf("%w: %q is not canonical: the account's name is %q", ErrInvalidAccount, s, a.String())
	}
	return a, nil
}

// String returns the account's canonical name: its role, then each owner
// percent-encoded, joined by ":". An owner's encoding leaves only
// [A-Za-z0-9._~-] as they are, so neither ":" nor "%" ever appears raw in a
// part, and no owner id can make the name of another role's account or
// another merchant's: "mer_1" is "merchant:mer_1", payer "cus_1" of mer_1
// is "payer:mer_1:cus_1", and a payer named "mer_B" by merchant mer_A is
// "payer:mer_A:mer_B". The zero AccountID's name is "".
func (a AccountID) String() string {
	spec, ok := a.role.spec()
	if !ok {
		return ""
	}
	var b strings.Builder
	b.WriteString(spec.name)
	for _, o := range a.owners[:len(spec.owners)] {
		b.WriteByte(':')
		escapePart(&b, o)
	}
	return b.String()
}

// Role returns the account's role.
func (a AccountID) Role() Role { return a.role }

// Merchant returns the merchant the account belongs to: every role has one.
func (a AccountID) Merchant() string { return a.owners[0] }

// Payer returns the payer id of a payer account, or "" for any other role.
func (a AccountID) Payer() string {
	if a.role != RolePayer {
		return ""
	}
	return a.owners[1]
}

const upperHex = "0123456789ABCDEF"

// unreserved reports whether c stands for itself in an account name: the
// unreserved characters of RFC 3986, which also travel unescaped in a URL
// path.
func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// escapePart writes s with every byte that is not unreserved as %XX
// (upper-case hex).
func escapePart(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
}

// unescapePart decodes %XX escapes (either case of hex: ParseAccountID then
// refuses a name that is not canonical). It reports false for a character
// outside the unreserved set, or a broken escape.
func unescapePart(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case unreserved(c):
			b.WriteByte(c)
		case c == '%' && i+2 < len(s) && fromHex(s[i+1]) >= 0 && fromHex(s[i+2]) >= 0:
			b.WriteByte(byte(fromHex(s[i+1])<<4 | fromHex(s[i+2])))
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), true
}

func fromHex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	}
	return -1
}

// ValidCurrency reports whether code looks like an ISO 4217 code: three
// upper-case ASCII letters. Whether it is an active currency is the shared
// table's answer (domain/money), asked when an event is applied, not here:
// a transaction this check refuses is dead-lettered before it is recorded,
// while an event in a currency the table does not hold is parked, for
// `ledger inbox retry` once a version that knows it runs.
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

// Balance is what an account holds in one currency. Posted is the sum of
// its entries, positive when the account has received more than it paid (a
// merchant), negative for a payer; it is what the account has available.
// Pending is the sum of the open holds of the merchant's authorized
// payments: money that a capture may still post, never counted in
// available. Storage keeps both per account and currency, updated by the
// database in every posting's transaction, so a read costs the same however
// long the account's history; a posting that would take either past what
// int64 holds is refused (ErrBalanceLimit).
type Balance struct {
	account  AccountID
	currency string
	posted   int64
	pending  int64
}

// RehydrateBalance rebuilds a Balance that storage kept. It trusts its
// input: the entries and holds were validated when they were written.
func RehydrateBalance(account AccountID, currency string, posted, pending int64) Balance {
	return Balance{account: account, currency: currency, posted: posted, pending: pending}
}

// Account returns the account the balance belongs to.
func (b Balance) Account() AccountID { return b.account }

// Currency returns the ISO 4217 code of the balance.
func (b Balance) Currency() string { return b.currency }

// Amount returns the signed posted balance in minor units: Posted.
func (b Balance) Amount() int64 { return b.posted }

// Posted returns the sum of the account's entries in minor units.
func (b Balance) Posted() int64 { return b.posted }

// Available returns what the account can pay out: what was posted. Held
// money is not available until it is captured.
func (b Balance) Available() int64 { return b.posted }

// Pending returns the sum of the merchant's open holds (0 for a payer).
func (b Balance) Pending() int64 { return b.pending }
