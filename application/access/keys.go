package access

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// StoredKey is what the store keeps of a key: its public part, the hash of
// the whole key, whom it acts for and its history. Never the key.
type StoredKey struct {
	Key
	Hash       []byte
	MerchantID string // "" for a platform key
	Name       string
	CreatedAt  time.Time
	LastUsedAt time.Time // zero: never used (or not yet recorded)
	RevokedAt  time.Time // zero: active
}

// Revoked reports whether the key was revoked.
func (k StoredKey) Revoked() bool { return !k.RevokedAt.IsZero() }

// Principal is whom the key acts as.
func (k StoredKey) Principal() Principal {
	if k.Platform {
		return PlatformPrincipal(k.ID)
	}
	return MerchantPrincipal(k.ID, k.MerchantID)
}

// Store keeps API keys. The consumer (this package) declares it; the
// Postgres implementation is adapters/postgres/apikeystore, and
// accesstest.RunContract holds both it and the fake to the same behaviour.
type Store interface {
	// Add stores k. Errors: ErrKeyExists when a key has its id or hash.
	Add(ctx context.Context, k StoredKey) error
	// FindByHash returns the key whose hash is hash, revoked or not.
	// Errors: ErrUnknownKey, dependency.ErrUnavailable.
	FindByHash(ctx context.Context, hash []byte) (StoredKey, error)
	// List returns every key, oldest first.
	List(ctx context.Context) ([]StoredKey, error)
	// Revoke marks key id revoked at at; a key revoked before keeps its
	// first time. Errors: ErrUnknownKey.
	Revoke(ctx context.Context, id string, at time.Time) error
	// TouchUsed records when each key id was last used; it never moves a
	// key's last use back, and ignores ids it does not know.
	TouchUsed(ctx context.Context, used map[string]time.Time) error
}

// Keys issues, lists and revokes keys: the `payments apikey` commands, and
// the tools that need a platform key.
type Keys struct {
	store  Store
	now    func() time.Time
	random io.Reader
}

// NewKeys returns Keys on store; now is the clock.
func NewKeys(store Store, now func() time.Time) *Keys {
	return &Keys{store: store, now: now}
}

// Issue is the input of Keys.Issue.
type Issue struct {
	Env        Env
	Platform   bool
	MerchantID string // required for a merchant key, refused for a platform key
	Name       string
	// Import, when set, is an existing key to store instead of a new one:
	// the demo's fixed key. Importing a key that is already stored as asked
	// succeeds and changes nothing, so a start-up job can run it every time.
	Import string
}

// Issue stores a new key (or the imported one) and returns the whole key,
// which is shown this once and never again, with what was stored. Errors:
// ErrMalformedKey (an import of the wrong form), ErrKeyExists (an import
// whose id is stored for another key or another owner), and a description
// of a missing or contradictory field.
func (s *Keys) Issue(ctx context.Context, in Issue) (string, StoredKey, error) {
	switch {
	case in.Platform && in.MerchantID != "":
		return "", StoredKey{}, errors.New("a platform key acts for every merchant: give no merchant")
	case !in.Platform && in.MerchantID == "":
		return "", StoredKey{}, errors.New("a merchant key needs its merchant")
	case in.Name == "":
		return "", StoredKey{}, errors.New("a key needs a name, to tell it from the others in a listing")
	}
	whole, k, err := in.Import, Key{}, error(nil)
	if in.Import != "" {
		if k, err = ParseKey(in.Import); err != nil {
			return "", StoredKey{}, err
		}
		if k.Platform != in.Platform {
			return "", StoredKey{}, fmt.Errorf("%w: the key's prefix says platform=%t", ErrMalformedKey, k.Platform)
		}
	} else if whole, k, err = NewKey(in.Env, in.Platform, s.random); err != nil {
		return "", StoredKey{}, err
	}
	h := Hash(whole)
	sk := StoredKey{Key: k, Hash: h[:], MerchantID: in.MerchantID, Name: in.Name, CreatedAt: s.now().UTC()}
	err = s.store.Add(ctx, sk)
	if errors.Is(err, ErrKeyExists) && in.Import != "" {
		// Stored before, by an earlier run of the same import: fine, if it
		// is this very key for the same owner, and still active.
		old, ferr := s.store.FindByHash(ctx, sk.Hash)
		if ferr == nil && old.ID == k.ID && old.Platform == k.Platform && old.MerchantID == in.MerchantID && !old.Revoked() {
			return whole, old, nil
		}
		return "", StoredKey{}, fmt.Errorf("%w: %s is stored for another key or owner, or revoked", ErrKeyExists, k.Prefix())
	}
	if err != nil {
		return "", StoredKey{}, err
	}
	return whole, sk, nil
}

// List returns every key, oldest first: their public parts only.
func (s *Keys) List(ctx context.Context) ([]StoredKey, error) { return s.store.List(ctx) }

// Revoke revokes key id now. An Authenticator may accept the key for up to
// its cache's TTL longer. Errors: ErrUnknownKey.
func (s *Keys) Revoke(ctx context.Context, id string) error {
	return s.store.Revoke(ctx, id, s.now().UTC())
}
