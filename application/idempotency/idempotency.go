// Package idempotency holds the rules of the Idempotency-Key, the same on
// every API that takes one: what a key may be, how a request is
// fingerprinted so that a retry can be told from another request under the
// same key, how long a key is honoured, and the errors a keyed request can
// meet. The HTTP header is read by adapters/httpserver; the stores keep the
// keys; this package decides what they mean.
//
// A key is optional. With one, a retry of a request that finished gets the
// first answer again (a replay) and nothing is done twice; the same key with
// another request is refused (ErrKeyReused); and a twin sent while the first
// request still holds the key is refused too (ErrKeyInFlight), not made to
// wait: the client retries after a moment and then gets the first answer.
// Refusing costs a request nothing held open, and a client that retries on
// a timeout learns at once that its first attempt is still running.
package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Errors of a keyed request, matched with errors.Is.
var (
	// ErrInvalidKey means the key is longer than MaxKeyLen or holds
	// something other than printable ASCII without spaces.
	ErrInvalidKey = errors.New("invalid idempotency key")
	// ErrKeyReused means a key was sent again with a different request:
	// the client has a bug, and replaying the first answer would hide it.
	ErrKeyReused = errors.New("idempotency key reused with a different request")
	// ErrKeyInFlight means the first request with this key has not
	// finished: nothing was done, and a retry after a moment gets the
	// first request's answer.
	ErrKeyInFlight = errors.New("a request with this idempotency key is in flight")
)

// MaxKeyLen bounds a key, in bytes.
const MaxKeyLen = 255

// KeyTTL is how long a key is honoured: the keys older than this are
// deleted, and a retry after that is a new request. Clients are promised
// at least 24 hours (docs/RUNBOOK.md, Retention); KeyTTL keeps a wide
// margin past it.
const KeyTTL = 48 * time.Hour

// Key identifies a client's retries of one request. A key is scoped to
// Merchant, the merchant the request acts for: two merchants may use the
// same Key without colliding, and neither ever sees the other's replay.
// Fingerprint is derived from the request, so that the same key with
// another request can be told apart from a retry.
type Key struct {
	Merchant    string
	Key         string
	Fingerprint string
}

// NewKey validates key, merchant's, and fingerprints the request given by
// parts: the name of its use case first, then every value that says what
// it asks for, each in a fixed order. An empty key means the request is
// not idempotent and yields nil. Errors: ErrInvalidKey.
func NewKey(merchant, key string, parts ...string) (*Key, error) {
	if key == "" {
		return nil, nil
	}
	if len(key) > MaxKeyLen {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidKey, MaxKeyLen)
	}
	for i := range len(key) {
		if key[i] < 0x21 || key[i] > 0x7e {
			return nil, fmt.Errorf("%w: only printable ASCII without spaces is allowed", ErrInvalidKey)
		}
	}
	return &Key{Merchant: merchant, Key: key, Fingerprint: fingerprint(parts)}, nil
}

// fingerprint hashes parts, each prefixed with its length so that
// ("ab", "c") and ("a", "bc") differ. Stored fingerprints are compared with
// the retries' for as long as a key lives: a change here answers every
// retry of a request made before it ErrKeyReused.
func fingerprint(parts []string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s|", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Scoped is the key's identity in one string: its merchant and itself,
// joined by a separator neither can hold (merchant ids have no control
// characters, keys are printable ASCII), so that two different pairs never
// make the same string. Stores name the key's lock with it.
func (k *Key) Scoped() string { return k.Merchant + "\x1f" + k.Key }
