package access

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"io"
	"strings"
)

// Env is the environment a key is labelled for, the second part of its
// prefix: pk_test_… or pk_live_…. The label lets people and secret scanners
// tell a live key from a test one at a glance.
type Env string

// The environments.
const (
	EnvTest Env = "test"
	EnvLive Env = "live"
)

// ParseEnv reads "test" or "live".
func ParseEnv(s string) (Env, error) {
	switch e := Env(s); e {
	case EnvTest, EnvLive:
		return e, nil
	}
	return "", fmt.Errorf("key environment %q: want test or live", s)
}

// A key reads pk_<env>_[plat_]<id>_<secret>: the prefix says what it is, the
// id (10 random bytes) names it in listings and logs, and the secret (32
// random bytes) is what makes it a credential. Both are lower-case base32,
// which has no separator in its alphabet, so the form parses without doubt.
const (
	idLen         = 16 // base32 of 10 bytes
	secretLen     = 52 // base32 of 32 bytes
	platformLabel = "plat"
)

var encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Key is the public part of an API key: everything but its secret.
type Key struct {
	Env      Env
	Platform bool
	ID       string
}

// Prefix is the key as far as its id, e.g. pk_test_plat_<id>: what
// listings show, never enough to authenticate.
func (k Key) Prefix() string {
	p := "pk_" + string(k.Env) + "_"
	if k.Platform {
		p += platformLabel + "_"
	}
	return p + k.ID
}

// ParseKey reads the form of an API key and returns its public part.
// Errors: ErrMalformedKey, with nothing of the key in its text.
func ParseKey(s string) (Key, error) {
	parts := strings.Split(s, "_")
	var k Key
	switch {
	case len(parts) == 4:
	case len(parts) == 5 && parts[2] == platformLabel:
		k.Platform = true
		parts = append(parts[:2], parts[3:]...)
	default:
		return Key{}, ErrMalformedKey
	}
	env, err := ParseEnv(parts[1])
	if parts[0] != "pk" || err != nil || !isBase32(parts[2], idLen) || !isBase32(parts[3], secretLen) {
		return Key{}, ErrMalformedKey
	}
	k.Env, k.ID = env, parts[2]
	return k, nil
}

func isBase32(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// NewKey makes a key of env, the platform's or a merchant's, from random
// (crypto/rand.Reader unless a test passes its own) and returns the whole
// key, shown once, and its public part.
func NewKey(env Env, platform bool, random io.Reader) (string, Key, error) {
	if random == nil {
		random = rand.Reader
	}
	b := make([]byte, 10+32)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", Key{}, fmt.Errorf("make an API key: %w", err)
	}
	k := Key{Env: env, Platform: platform, ID: encoding.EncodeToString(b[:10])}
	return k.Prefix() + "_" + encoding.EncodeToString(b[10:]), k, nil
}

// Hash is what the store keeps of a key and looks it up by: SHA-256 of the
// whole key.
func Hash(key string) [sha256.Size]byte { return sha256.Sum256([]byte(key)) }
