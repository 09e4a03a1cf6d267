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

// IsB64Token reports whether s is a b64token (RFC 6750 section 2.1): one or
// more letters, digits and -._~+/, then any number of "=". It is the only
// form a token can take in an Authorization: Bearer header, so it is the one
// definition of a well-formed bearer token: httpserver.ParseBearer accepts a
// header's token exactly when this does, and NewTokens refuses a configured
// token it does not, which would otherwise be accepted at start-up and never
// match a request.
func IsB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~', c == '+', c == '/':
		default:
			return false
		}
	}
	return true
}

// Tokens is a fixed set of operator tokens, for an internal API whose
// callers are operators and other services rather than merchants (the
// ledger's read API). It keeps only their SHA-256 and compares a presented
// token's hash with each in constant time, so neither a token's bytes nor
// its length show in the timing.
type Tokens struct {
	hashes [][sha256.Size]byte
}

// NewTokens returns the set of list, comma-separated: "" is the empty set,
// which refuses every token. Errors: a token shorter than MinTokenLen or not
// a b64token (IsB64Token: a Bearer header could never carry it); the error
// names its position in the list, never the token.
func NewTokens(list string) (Tokens, error) {
	var t Tokens
	if strings.TrimSpace(list) == "" {
		return t, nil
	}
	for i, tok := range strings.Split(list, ",") {
		tok = strings.TrimSpace(tok)
		if len(tok) < MinTokenLen || !IsB64Token(tok) {
			return Tokens{}, fmt.Errorf("token %d of the list: want at least %d characters of a bearer token (letters, digits and -._~+/, then any =; RFC 6750 b64token)", i+1, MinTokenLen)
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
	if !IsB64Token(token) {
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
