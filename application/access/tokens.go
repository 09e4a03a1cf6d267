package access

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"
)

// MinTokenLen is the shortest operator token accepted: 32 characters of a
// random token are well past guessing.
const MinTokenLen = 32

// Tokens is a fixed set of operator tokens, for an internal API whose
// callers are operators and other services rather than merchants (the
// ledger's read API). It keeps only their SHA-256 and compares a presented
// token's hash with each in constant time, so neither a token's bytes nor
// its length show in the timing.
type Tokens struct {
	hashes [][sha256.Size]byte
}

// NewTokens returns the set of list, comma-separated: "" is the empty set,
// which refuses every token. Errors: a token shorter than MinTokenLen or
// with a character outside printable ASCII (the error names its position
// in the list, never the token).
func NewTokens(list string) (Tokens, error) {
	var t Tokens
	if strings.TrimSpace(list) == "" {
		return t, nil
	}
	for i, tok := range strings.Split(list, ",") {
		tok = strings.TrimSpace(tok)
		if len(tok) < MinTokenLen || !printable(tok) {
			return Tokens{}, fmt.Errorf("token %d of the list: want at least %d printable ASCII characters without spaces", i+1, MinTokenLen)
		}
		t.hashes = append(t.hashes, sha256.Sum256([]byte(tok)))
	}
	return t, nil
}

// Len is the number of tokens in the set.
func (t Tokens) Len() int { return len(t.hashes) }

// Check returns nil when token is one of the set. Errors: ErrMalformedKey,
// ErrUnknownKey.
func (t Tokens) Check(token string) error {
	if token == "" || !printable(token) {
		return ErrMalformedKey
	}
	h := sha256.Sum256([]byte(token))
	found := 0
	for _, want := range t.hashes {
		found |= subtle.ConstantTimeCompare(h[:], want[:])
	}
	if found == 1 {
		return nil
	}
	return ErrUnknownKey
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
