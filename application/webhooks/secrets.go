package webhooks

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// ErrSealed means a sealed secret could not be opened: it was sealed under
// another key (WEBHOOKS_SECRETS_KEY changed) or was altered, or sealed for
// another endpoint.
var ErrSealed = errors.New("sealed secret cannot be opened with this key")

// Sealer encrypts endpoints' signing secrets at rest with AES-256-GCM: the
// database holds only what Seal returns, so a copy of it signs nothing
// without the key, which lives in the configuration (WEBHOOKS_SECRETS_KEY).
// The endpoint's id is the associated data: a sealed secret moved to
// another endpoint's row does not open. Safe for concurrent use.
type Sealer struct{ aead cipher.AEAD }

// NewSealer returns a Sealer with key, 32 bytes.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("the secrets key is %d bytes; AES-256 wants 32", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts secret for endpointID: a random nonce, then the ciphertext
// and its tag.
func (s *Sealer) Seal(endpointID string, secret []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(secret)+s.aead.Overhead())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, secret, []byte(endpointID))
}

// Open decrypts what Seal sealed for endpointID. Errors: ErrSealed.
func (s *Sealer) Open(endpointID string, sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return nil, ErrSealed
	}
	b, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(endpointID))
	if err != nil {
		return nil, ErrSealed
	}
	return b, nil
}
