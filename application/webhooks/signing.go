package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers of every attempt.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
	UserAgent       = "payments-outbox-webhooks/1"
)

// secretPrefix starts every signing secret shown to a merchant, as the
// Standard Webhooks specification spells it.
const secretPrefix = "whsec_"

// secretBytes is a new secret's length: 256 random bits (the specification
// asks for 24 to 64 bytes).
const secretBytes = 32

// NewSecret returns a new signing secret's bytes, from crypto/rand.
func NewSecret() []byte {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather)
	return b
}

// FormatSecret is the secret as a merchant is shown it once: whsec_ and
// the base64 of its bytes.
func FormatSecret(b []byte) Secret {
	return Secret(secretPrefix + base64.StdEncoding.EncodeToString(b))
}

// ParseSecret returns the bytes of a whsec_ secret.
func ParseSecret(s Secret) ([]byte, error) {
	rest, ok := strings.CutPrefix(string(s), secretPrefix)
	if !ok {
		return nil, errors.New("a signing secret starts with " + secretPrefix)
	}
	b, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(b) < 24 || len(b) > 64 {
		return nil, errors.New("a signing secret is the base64 of 24 to 64 bytes")
	}
	return b, nil
}

// Sign returns the webhook-signature header of one attempt: a "v1,"
// signature — the base64 of HMAC-SHA256 over "{id}.{timestamp}.{body}" —
// per secret, space-separated, so that during a rotation a receiver
// holding either secret verifies it (Standard Webhooks 1.0).
func Sign(secrets [][]byte, id string, at time.Time, body []byte) string {
	sigs := make([]string, 0, len(secrets))
	prefix := fmt.Sprintf("%s.%d.", id, at.Unix())
	for _, s := range secrets {
		mac := hmac.New(sha256.New, s)
		mac.Write([]byte(prefix))
		mac.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}

// Headers are an attempt's headers: the event's id (the same on every
// attempt, so that receivers dedupe), this attempt's time and its
// signatures.
func Headers(secrets [][]byte, id string, at time.Time, body []byte) map[string]string {
	return map[string]string{
		HeaderID:        id,
		HeaderTimestamp: strconv.FormatInt(at.Unix(), 10),
		HeaderSignature: Sign(secrets, id, at, body),
		"Content-Type":  "application/json",
		"User-Agent":    UserAgent,
	}
}
