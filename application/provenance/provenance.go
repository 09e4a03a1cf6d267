// Package provenance is the proof that an event came from the payments
// service: the service signs the exact bytes it publishes with an Ed25519
// private key only it holds, and each consumer (the ledger, the webhooks
// service) verifies that signature with the payments service's public keys
// before it records, posts or delivers anything.
//
// A signature travels beside the message, not inside it, as two message
// attributes: KeyIDAttribute, the id of the key that signed (so that keys
// can be rotated: consumers hold a set of public keys, by id), and
// SignatureAttribute, "v1a," and the standard base64 of the 64-byte Ed25519
// signature of the message body — the notation of Standard Webhooks'
// asymmetric signatures. Standard Webhooks signs "id.timestamp.body" and
// refuses a timestamp more than a few minutes old; a queue keeps a message
// for days (a DLQ for two weeks) and must still accept it, so the timestamp
// would prove nothing here. The body is what is signed, byte for byte: it
// holds the event's id, type and data, and a signature taken from one event
// verifies on no other body. Replaying a genuine event whole is what the
// inbox absorbs (an event id applies once).
//
// docs/SECURITY.md has the threat, the two layers of defence and the
// rotation of the keys.
package provenance

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
)

// The message attributes a signed message carries, each a string. The
// AsyncAPI document (api/events.asyncapi.yaml) lists them among every
// message's headers.
const (
	KeyIDAttribute     = "signature-key-id"
	SignatureAttribute = "signature"
)

// scheme is the prefix of a signature's wire form: Standard Webhooks' name
// for an Ed25519 signature.
const scheme = "v1a,"

// keyIDPattern is what a key id may be: short, and free of the separators of
// a key set's text form (",", ":") and of anything a log line would have to
// escape.
var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// The reasons a message fails verification. Each error Verify returns wraps
// one of them; Reason names it for a metric label.
var (
	// ErrMissing: the message carries neither attribute.
	ErrMissing = errors.New("no signature")
	// ErrMalformed: one attribute without the other, a key id outside
	// keyIDPattern, or a signature that is not "v1a," and 64 bytes of base64.
	ErrMalformed = errors.New("malformed signature")
	// ErrUnknownKey: signed by a key id this consumer holds no public key for
	// (a retired key, a key from elsewhere, or a new key not yet deployed).
	ErrUnknownKey = errors.New("signed by an unknown key")
	// ErrBadSignature: the signature does not verify on the body under the
	// key its id names: another key's signature, another body's, or a body
	// changed after it was signed.
	ErrBadSignature = errors.New("signature does not verify")
)

// Reasons are the metric labels of the failures, in the order of the
// errors above: the values Reason returns.
var Reasons = []string{"missing_signature", "malformed_signature", "unknown_key", "bad_signature"}

// Reason names err's cause for a metric label and a DLQ message: one of
// Reasons, or "" when err is none of the verification errors.
func Reason(err error) string {
	for i, sentinel := range []error{ErrMissing, ErrMalformed, ErrUnknownKey, ErrBadSignature} {
		if errors.Is(err, sentinel) {
			return Reasons[i]
		}
	}
	return ""
}

// Signature is a message's proof of origin as it travels: the id of the
// signing key and the signature's wire form ("v1a,<base64>"). The zero value
// is no signature.
type Signature struct {
	KeyID string
	Value string
}

// Signer signs messages with one private key. Its String and LogValue name
// the key id only: the private key never reaches a log line or an error.
type Signer struct {
	id  string
	key ed25519.PrivateKey
}

// NewSigner returns a Signer of the key whose 32-byte seed is the standard
// base64 seed (as `payments signing-key create` prints it, or the last 32
// bytes of the DER form `openssl genpkey -algorithm ed25519` writes). Its
// errors never quote the seed.
func NewSigner(keyID, seed string) (*Signer, error) {
	if !keyIDPattern.MatchString(keyID) {
		return nil, fmt.Errorf("key id %q: want 1 to 64 of A-Z, a-z, 0-9, '.', '_' and '-'", keyID)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(seed))
	if err != nil || len(b) != ed25519.SeedSize {
		return nil, fmt.Errorf("private key: want the standard base64 of a %d-byte Ed25519 seed", ed25519.SeedSize)
	}
	return &Signer{id: keyID, key: ed25519.NewKeyFromSeed(b)}, nil
}

// GenerateSigner makes a new key from crypto/rand. An empty keyID is the
// key's fingerprint (Fingerprint), unique without coordination.
func GenerateSigner(keyID string) (*Signer, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate an Ed25519 key: %w", err)
	}
	if keyID == "" {
		keyID = Fingerprint(pub)
	}
	if !keyIDPattern.MatchString(keyID) {
		return nil, fmt.Errorf("key id %q: want 1 to 64 of A-Z, a-z, 0-9, '.', '_' and '-'", keyID)
	}
	return &Signer{id: keyID, key: key}, nil
}

// Fingerprint is a short name of a public key: "ed25519-" and the first 8
// bytes of its SHA-256, in hex.
func Fingerprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "ed25519-" + hex.EncodeToString(sum[:8])
}

// KeyID is the id the Signer's signatures carry.
func (s *Signer) KeyID() string { return s.id }

// Sign signs body, the exact bytes that will be published.
func (s *Signer) Sign(body []byte) Signature {
	return Signature{KeyID: s.id, Value: scheme + base64.StdEncoding.EncodeToString(ed25519.Sign(s.key, body))}
}

// PublicKey is the key the consumers verify this Signer's signatures with.
func (s *Signer) PublicKey() PublicKey {
	return PublicKey{ID: s.id, Key: s.key.Public().(ed25519.PublicKey)}
}

// Seed is the private key's seed in the form NewSigner reads: for
// `payments signing-key create` to print once, and for nothing else.
func (s *Signer) Seed() string { return base64.StdEncoding.EncodeToString(s.key.Seed()) }

// String names the signer by its key id, never its key.
func (s *Signer) String() string { return "provenance.Signer(" + s.id + ")" }

// LogValue names the signer by its key id in a log line, never its key.
func (s *Signer) LogValue() slog.Value { return slog.StringValue(s.String()) }

// PublicKey is one of the payments service's public keys, by id.
type PublicKey struct {
	ID  string
	Key ed25519.PublicKey
}

// String is the key's text form in a key set: "<id>:<standard base64>".
func (k PublicKey) String() string { return k.ID + ":" + base64.StdEncoding.EncodeToString(k.Key) }

// KeySet is the public keys a consumer accepts signatures from, by key id:
// during a rotation, the old key and the new.
type KeySet struct {
	keys map[string]ed25519.PublicKey
}

// NewKeySet returns a set of keys, refusing none and two under one id.
func NewKeySet(keys ...PublicKey) (KeySet, error) {
	if len(keys) == 0 {
		return KeySet{}, errors.New("no public key: want at least one")
	}
	set := KeySet{keys: make(map[string]ed25519.PublicKey, len(keys))}
	for _, k := range keys {
		if !keyIDPattern.MatchString(k.ID) {
			return KeySet{}, fmt.Errorf("key id %q: want 1 to 64 of A-Z, a-z, 0-9, '.', '_' and '-'", k.ID)
		}
		if len(k.Key) != ed25519.PublicKeySize {
			return KeySet{}, fmt.Errorf("key %s: want %d bytes, got %d", k.ID, ed25519.PublicKeySize, len(k.Key))
		}
		if _, dup := set.keys[k.ID]; dup {
			return KeySet{}, fmt.Errorf("key id %s appears twice", k.ID)
		}
		set.keys[k.ID] = k.Key
	}
	return set, nil
}

// ParseKeySet reads a set's text form: keys separated by commas, each
// "<id>:<standard base64 of the 32-byte public key>" (PublicKey.String;
// `payments signing-key create` prints one).
func ParseKeySet(s string) (KeySet, error) {
	var keys []PublicKey
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, b64, ok := strings.Cut(item, ":")
		if !ok {
			return KeySet{}, fmt.Errorf("%q: want <key id>:<base64 public key>", item)
		}
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return KeySet{}, fmt.Errorf("key %s: not standard base64: %w", id, err)
		}
		keys = append(keys, PublicKey{ID: id, Key: b})
	}
	return NewKeySet(keys...)
}

// IDs are the set's key ids, sorted: what a start-up log line may show.
func (k KeySet) IDs() []string {
	ids := make([]string, 0, len(k.keys))
	for id := range k.keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Verifier checks messages' signatures with a key set.
type Verifier struct {
	keys           KeySet
	acceptUnsigned bool
}

// VerifierConfig tunes a Verifier; its zero value refuses every message
// without a valid signature.
type VerifierConfig struct {
	// AcceptUnsigned lets a message that carries no signature at all pass
	// (Unsigned): the transition while a producer that does not sign yet may
	// still publish, and only then (docs/SECURITY.md, "Turning signatures
	// on"). A message that carries a signature is verified either way.
	AcceptUnsigned bool
}

// NewVerifier returns a Verifier of keys.
func NewVerifier(keys KeySet, cfg VerifierConfig) *Verifier {
	return &Verifier{keys: keys, acceptUnsigned: cfg.AcceptUnsigned}
}

// Outcome is how a message passed verification.
type Outcome int

const (
	// Verified: signed by a key of the set, over exactly this body.
	Verified Outcome = iota + 1
	// Unsigned: no signature, accepted because the Verifier accepts unsigned
	// messages.
	Unsigned
)

// Verify checks that sig signs body under the key of the set its key id
// names. Its error wraps ErrMissing, ErrMalformed, ErrUnknownKey or
// ErrBadSignature, and quotes nothing of sig but a well-formed key id.
func (v *Verifier) Verify(body []byte, sig Signature) (Outcome, error) {
	switch {
	case sig.KeyID == "" && sig.Value == "":
		if v.acceptUnsigned {
			return Unsigned, nil
		}
		return 0, fmt.Errorf("%w: the message has neither %s nor %s", ErrMissing, KeyIDAttribute, SignatureAttribute)
	case sig.KeyID == "" || sig.Value == "":
		return 0, fmt.Errorf("%w: the message has only one of %s and %s", ErrMalformed, KeyIDAttribute, SignatureAttribute)
	case !keyIDPattern.MatchString(sig.KeyID):
		return 0, fmt.Errorf("%w: the key id is not 1 to 64 of A-Z, a-z, 0-9, '.', '_' and '-'", ErrMalformed)
	}
	raw, ok := strings.CutPrefix(sig.Value, scheme)
	if !ok {
		return 0, fmt.Errorf("%w: the signature does not start with %q", ErrMalformed, scheme)
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(b) != ed25519.SignatureSize {
		return 0, fmt.Errorf("%w: the signature is not the base64 of %d bytes", ErrMalformed, ed25519.SignatureSize)
	}
	pub, ok := v.keys.keys[sig.KeyID]
	if !ok {
		return 0, fmt.Errorf("%w: key id %q is not among the %d public keys held (%s)", ErrUnknownKey, sig.KeyID, len(v.keys.keys), strings.Join(v.keys.IDs(), ", "))
	}
	if !ed25519.Verify(pub, body, b) {
		return 0, fmt.Errorf("%w: not a signature of this body by key %q", ErrBadSignature, sig.KeyID)
	}
	return Verified, nil
}
