package access

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// CacheTTL is how long an Authenticator trusts a key it verified before it
// asks the store again, and so the longest a revoked key keeps working on a
// running replica (docs/SECURITY.md). It spares every request a database
// round trip.
const CacheTTL = 10 * time.Second

// TouchEvery is the most often a key's last use is written: last_used_at
// says "in use lately", it is no audit log, and a write per request would
// cost more than the request.
const TouchEvery = time.Minute

// maxCached bounds the cache. Only keys that verified are cached, so it
// holds at most as many entries as there are live keys in use; past the
// bound it is emptied and refilled, never grown.
const maxCached = 10_000

// Authenticator turns a presented API key into a Principal: it checks the
// key's form, looks it up by hash, refuses a revoked key, and remembers a
// verified key for CacheTTL. It records each key's last use in memory and
// writes it at most every TouchEvery (Run). Safe for concurrent use.
type Authenticator struct {
	store Store
	now   func() time.Time
	ttl   time.Duration

	mu      sync.Mutex
	cache   map[[sha256.Size]byte]cached
	pending map[string]time.Time // key id → last use, not yet written
	touched map[string]time.Time // key id → last use queued for writing
}

type cached struct {
	principal Principal
	until     time.Time
}

// AuthenticatorConfig tunes an Authenticator; its zero value means the
// defaults.
type AuthenticatorConfig struct {
	// CacheTTL is how long a verified key is trusted before it is looked up
	// again: 0 means CacheTTL, a negative value no cache (every call looks
	// up; a test's).
	CacheTTL time.Duration
}

// NewAuthenticator returns an Authenticator on store with the clock now.
func NewAuthenticator(store Store, now func() time.Time, cfg AuthenticatorConfig) *Authenticator {
	ttl := cfg.CacheTTL
	if ttl == 0 {
		ttl = CacheTTL
	}
	return &Authenticator{
		store: store, now: now, ttl: ttl,
		cache: map[[sha256.Size]byte]cached{}, pending: map[string]time.Time{}, touched: map[string]time.Time{},
	}
}

// Authenticate returns whom key acts as. Errors: ErrMalformedKey (not of a
// key's form: nothing was looked up), ErrUnknownKey (unknown or revoked),
// dependency.ErrUnavailable (the store could not be reached). The lookup is by the
// key's hash, so no comparison of the key itself can leak its bytes through
// timing.
func (a *Authenticator) Authenticate(ctx context.Context, key string) (Principal, error) {
	if _, err := ParseKey(key); err != nil {
		return Principal{}, err
	}
	h := Hash(key)
	now := a.now()
	a.mu.Lock()
	if c, ok := a.cache[h]; ok && now.Before(c.until) {
		a.used(c.principal.KeyID(), now)
		a.mu.Unlock()
		return c.principal, nil
	}
	a.mu.Unlock()

	sk, err := a.store.FindByHash(ctx, h[:])
	if err != nil {
		return Principal{}, err
	}
	if sk.Revoked() {
		return Principal{}, ErrUnknownKey
	}
	p := sk.Principal()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ttl > 0 {
		if len(a.cache) >= maxCached {
			clear(a.cache)
		}
		a.cache[h] = cached{principal: p, until: now.Add(a.ttl)}
	}
	a.used(p.KeyID(), now)
	return p, nil
}

// used notes a use of key id, at most one per TouchEvery. a.mu is held.
func (a *Authenticator) used(id string, now time.Time) {
	if last, ok := a.touched[id]; ok && now.Sub(last) < TouchEvery {
		return
	}
	if len(a.touched) >= maxCached {
		clear(a.touched)
	}
	a.touched[id] = now
	a.pending[id] = now
}

// Flush writes the last uses noted since the previous Flush. On error they
// are kept for the next one.
func (a *Authenticator) Flush(ctx context.Context) error {
	a.mu.Lock()
	batch := a.pending
	a.pending = map[string]time.Time{}
	a.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	if err := a.store.TouchUsed(ctx, batch); err != nil {
		a.mu.Lock()
		for id, t := range batch {
			if t.After(a.pending[id]) {
				a.pending[id] = t
			}
		}
		a.mu.Unlock()
		return fmt.Errorf("record API keys' last use: %w", err)
	}
	return nil
}

// Run flushes the last uses every TouchEvery until ctx ends, then once
// more, within a few seconds, so a stop loses none. It returns nil.
func (a *Authenticator) Run(ctx context.Context, log *slog.Logger) error {
	t := time.NewTicker(TouchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
			defer cancel()
			if err := a.Flush(fctx); err != nil {
				log.Warn("API keys' last use not recorded at shutdown", "err", err)
			}
			return nil
		case <-t.C:
			if err := a.Flush(ctx); err != nil {
				log.WarnContext(ctx, "API keys' last use not recorded; retrying at the next flush", "err", err)
			}
		}
	}
}
