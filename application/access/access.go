// Package access decides who a request acts for. An API key is looked up by
// its hash and becomes a Principal: one merchant, which acts for itself
// only, or the platform that runs the service, which may act for any
// merchant (as a Stripe Connect platform acts for its connected accounts).
// The use cases take the Principal as an argument and apply the scoping
// rule themselves; the HTTP layer only reads the Authorization header and
// calls Authenticator.Authenticate.
//
// Keys are stored as a SHA-256 of the whole key, never the key: the secret
// part is 256 random bits, so a fast hash is as safe as a slow one and
// costs the lookup nothing. Tokens is the simpler form for an internal API
// (the ledger's): a fixed set of operator tokens from the configuration.
package access

import (
	"errors"
)

// Errors of authentication, matched with errors.Is. None of them, nor any
// error this package returns, holds a key or a token.
var (
	// ErrMalformedKey means the credential is not of the form of an API key
	// (or operator token): it was not looked up.
	ErrMalformedKey = errors.New("malformed API key")
	// ErrUnknownKey means no key has this hash, or the key was revoked. The
	// two are one error on purpose: a caller learns nothing from the
	// difference.
	ErrUnknownKey = errors.New("unknown or revoked API key")
	// ErrRateLimited means the key made more requests than its limit
	// allows (the limits are per second): the verification was refused,
	// not answered.
	ErrRateLimited = errors.New("API key over its rate limit")
	// ErrKeyExists means a key with the same id or hash is already stored.
	ErrKeyExists = errors.New("API key already exists")
	// ErrUnauthenticated means a use case was called without a principal;
	// the HTTP layer never lets that happen, so it is a bug, refused rather
	// than served with no scope.
	ErrUnauthenticated = errors.New("no authenticated principal")
)

// Principal is who a request acts as: a merchant, or the platform. The zero
// value is neither and acts for no one, so a principal that was forgotten
// denies rather than allows.
type Principal struct {
	keyID    string
	merchant string
	platform bool
}

// MerchantPrincipal is a merchant's key: it acts for merchantID only.
func MerchantPrincipal(keyID, merchantID string) Principal {
	return Principal{keyID: keyID, merchant: merchantID}
}

// PlatformPrincipal is the platform's key: it may act for any merchant.
func PlatformPrincipal(keyID string) Principal {
	return Principal{keyID: keyID, platform: true}
}

// KeyID is the public id of the key the principal authenticated with; it
// names the key in logs and rate limits and is no secret.
func (p Principal) KeyID() string { return p.keyID }

// Merchant is the merchant a merchant key acts for; "" for the platform and
// for the zero Principal.
func (p Principal) Merchant() string { return p.merchant }

// IsPlatform reports whether p is the platform.
func (p Principal) IsPlatform() bool { return p.platform }

// Valid reports whether p is a merchant or the platform.
func (p Principal) Valid() bool { return p.platform || p.merchant != "" }

// ActsFor reports whether p may act for merchantID: the platform for every
// merchant, a merchant for itself, the zero Principal for no one.
func (p Principal) ActsFor(merchantID string) bool {
	return p.platform || (p.merchant != "" && p.merchant == merchantID)
}
