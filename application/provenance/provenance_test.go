package provenance_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/provenance"
)

func mustSigner(t *testing.T, id string) *provenance.Signer {
	t.Helper()
	s, err := provenance.GenerateSigner(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustSet(t *testing.T, keys ...provenance.PublicKey) provenance.KeySet {
	t.Helper()
	set, err := provenance.NewKeySet(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestOnlyThePaymentsKeySignsWhatItPublished: a signature verifies on the
// exact body it was made over, under the key its id names, and nothing
// else passes — each forgery fails with its own reason.
func TestOnlyThePaymentsKeySignsWhatItPublished(t *testing.T) {
	t.Parallel()
	payments := mustSigner(t, "k1")
	other := mustSigner(t, "k1") // another key under the same id: an attacker's
	stranger := mustSigner(t, "k9")
	v := provenance.NewVerifier(mustSet(t, payments.PublicKey()), provenance.VerifierConfig{})

	genuine := []byte(`{"id":"0198b5f4-0000-7000-8000-000000000001","type":"payment.created","data":{"amount":1050}}`)
	forged := []byte(`{"id":"0198b5f4-0000-7000-8000-000000000002","type":"payment.captured","data":{"amount":9999999999}}`)
	sig := payments.Sign(genuine)

	if out, err := v.Verify(genuine, sig); err != nil || out != provenance.Verified {
		t.Fatalf("the genuine event: got %v, %v; want Verified", out, err)
	}
	tests := []struct {
		name   string
		body   []byte
		sig    provenance.Signature
		reason string
	}{
		{"no signature", forged, provenance.Signature{}, "missing_signature"},
		{"signed by another key under the payments key's id", forged, other.Sign(forged), "bad_signature"},
		{"signed by a key nobody deployed", forged, stranger.Sign(forged), "unknown_key"},
		{"the genuine signature, over other bytes", append(bytes.Clone(genuine), ' '), sig, "bad_signature"},
		{"a genuine event's signature replayed on another event", forged, sig, "bad_signature"},
		{"a key id alone", forged, provenance.Signature{KeyID: "k1"}, "malformed_signature"},
		{"a signature alone", forged, provenance.Signature{Value: sig.Value}, "malformed_signature"},
		{"another scheme", forged, provenance.Signature{KeyID: "k1", Value: "v1," + strings.TrimPrefix(sig.Value, "v1a,")}, "malformed_signature"},
		{"not base64", forged, provenance.Signature{KeyID: "k1", Value: "v1a,!!!"}, "malformed_signature"},
		{"a short signature", forged, provenance.Signature{KeyID: "k1", Value: "v1a," + base64.StdEncoding.EncodeToString(make([]byte, 32))}, "malformed_signature"},
		{"a key id no log should carry", forged, provenance.Signature{KeyID: "k1\nlevel=ERROR " + strings.Repeat("x", 100), Value: sig.Value}, "malformed_signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := v.Verify(tt.body, tt.sig)
			if err == nil {
				t.Fatalf("got %v, nil; want an error with reason %s", out, tt.reason)
			}
			if got := provenance.Reason(err); got != tt.reason {
				t.Errorf("reason %q (%v), want %q", got, err, tt.reason)
			}
			if strings.Contains(err.Error(), "\n") || len(err.Error()) > 300 {
				t.Errorf("error %q: a log line would carry what the sender chose", err)
			}
		})
	}
}

// TestUnsignedIsAcceptedOnlyWhileConfiguredTo: the transition accepts a
// message with no signature at all, and nothing else it would refuse.
func TestUnsignedIsAcceptedOnlyWhileConfiguredTo(t *testing.T) {
	t.Parallel()
	payments := mustSigner(t, "k1")
	set := mustSet(t, payments.PublicKey())
	body := []byte(`{"id":"x"}`)
	if out, err := provenance.NewVerifier(set, provenance.VerifierConfig{AcceptUnsigned: true}).Verify(body, provenance.Signature{}); err != nil || out != provenance.Unsigned {
		t.Errorf("accepting unsigned, an unsigned message: got %v, %v; want Unsigned", out, err)
	}
	if _, err := provenance.NewVerifier(set, provenance.VerifierConfig{}).Verify(body, provenance.Signature{}); !errors.Is(err, provenance.ErrMissing) {
		t.Errorf("refusing unsigned, an unsigned message: got %v, want ErrMissing", err)
	}
	bad := mustSigner(t, "k1").Sign(body)
	if _, err := provenance.NewVerifier(set, provenance.VerifierConfig{AcceptUnsigned: true}).Verify(body, bad); !errors.Is(err, provenance.ErrBadSignature) {
		t.Errorf("accepting unsigned, a bad signature: got %v, want ErrBadSignature", err)
	}
	if out, err := provenance.NewVerifier(set, provenance.VerifierConfig{AcceptUnsigned: true}).Verify(body, payments.Sign(body)); err != nil || out != provenance.Verified {
		t.Errorf("accepting unsigned, a good signature: got %v, %v; want Verified", out, err)
	}
}

// TestRotation: a consumer holding the old and the new public key accepts
// both keys' signatures; once the old one is removed, its signatures are an
// unknown key's.
func TestRotation(t *testing.T) {
	t.Parallel()
	old, next := mustSigner(t, "2026-01"), mustSigner(t, "2026-07")
	body := []byte(`{"id":"y"}`)
	both := provenance.NewVerifier(mustSet(t, old.PublicKey(), next.PublicKey()), provenance.VerifierConfig{})
	for _, s := range []*provenance.Signer{old, next} {
		if _, err := both.Verify(body, s.Sign(body)); err != nil {
			t.Errorf("holding both keys, %s's signature: %v", s.KeyID(), err)
		}
	}
	after := provenance.NewVerifier(mustSet(t, next.PublicKey()), provenance.VerifierConfig{})
	if _, err := after.Verify(body, old.Sign(body)); !errors.Is(err, provenance.ErrUnknownKey) {
		t.Errorf("the old key removed, its signature: got %v, want ErrUnknownKey", err)
	}
}

// TestKeyTextForms: what `payments signing-key create` prints is what the
// variables read, and a key made by openssl reads too: the seed is the last
// 32 bytes of `openssl genpkey -algorithm ed25519 -outform DER` (PKCS #8),
// the public key the last 32 of `openssl pkey -pubout -outform DER` (SPKI),
// which is what docs/SECURITY.md tells an operator to take.
func TestKeyTextForms(t *testing.T) {
	t.Parallel()
	s := mustSigner(t, "")
	if !strings.HasPrefix(s.KeyID(), "ed25519-") || len(s.KeyID()) != len("ed25519-")+16 {
		t.Errorf("a generated key's id %q, want its fingerprint", s.KeyID())
	}
	again, err := provenance.NewSigner(s.KeyID(), s.Seed())
	if err != nil {
		t.Fatal(err)
	}
	set, err := provenance.ParseKeySet(" " + s.PublicKey().String() + " ,")
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("b")
	if _, err := provenance.NewVerifier(set, provenance.VerifierConfig{}).Verify(body, again.Sign(body)); err != nil {
		t.Errorf("a signer read back from its seed, verified with the key set read back from its text: %v", err)
	}

	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	spki, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	fromDER, err := provenance.NewSigner("openssl", base64.StdEncoding.EncodeToString(pkcs8[len(pkcs8)-32:]))
	if err != nil {
		t.Fatal(err)
	}
	derSet, err := provenance.ParseKeySet("openssl:" + base64.StdEncoding.EncodeToString(spki[len(spki)-32:]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provenance.NewVerifier(derSet, provenance.VerifierConfig{}).Verify(body, fromDER.Sign(body)); err != nil {
		t.Errorf("keys taken from openssl's DER forms: %v", err)
	}

	for _, bad := range []string{"", "k1", "k1:!!", "k1:" + base64.StdEncoding.EncodeToString(make([]byte, 31)),
		s.PublicKey().String() + "," + s.PublicKey().String(), "a,b:" + base64.StdEncoding.EncodeToString(make([]byte, 32))} {
		if _, err := provenance.ParseKeySet(bad); err == nil {
			t.Errorf("ParseKeySet(%q): got nil, want an error", bad)
		}
	}
	for _, bad := range []struct{ id, seed string }{{"", s.Seed()}, {"a:b", s.Seed()}, {"k", "c2VlZA=="}, {"k", "not base64"}} {
		if _, err := provenance.NewSigner(bad.id, bad.seed); err == nil {
			t.Errorf("NewSigner(%q, %q): got nil, want an error", bad.id, bad.seed)
		}
	}
}

// TestThePrivateKeyNeverReachesALog: a Signer printed, logged or refused
// shows its key id and never its seed.
func TestThePrivateKeyNeverReachesALog(t *testing.T) {
	t.Parallel()
	s := mustSigner(t, "k1")
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("signing", "signer", s)
	fmt.Fprintf(&buf, "%v %s %+v", s, s, s)
	_, err := provenance.NewSigner("bad id!", s.Seed())
	buf.WriteString(err.Error())
	_, err = provenance.NewSigner("k1", s.Seed()[:20])
	buf.WriteString(err.Error())
	if strings.Contains(buf.String(), s.Seed()) || strings.Contains(buf.String(), s.Seed()[:20]) {
		t.Errorf("the seed reached the output: %s", buf.String())
	}
	if !strings.Contains(buf.String(), "k1") {
		t.Errorf("the key id is missing from %s", buf.String())
	}
}

// fakeBroker records what the signing Publisher hands it.
type fakeBroker struct {
	msgs []outbox.Message
	sigs []provenance.Signature
}

func (b *fakeBroker) PublishSigned(_ context.Context, msgs []outbox.Message, sigs []provenance.Signature) []error {
	b.msgs, b.sigs = msgs, sigs
	errs := make([]error, len(msgs))
	errs[len(errs)-1] = errors.New("refused")
	return errs
}

// TestPublisherSignsEachPayload: the decorator hands the broker each
// message with the signature of its payload, and passes the broker's answer
// back to the relay unchanged.
func TestPublisherSignsEachPayload(t *testing.T) {
	t.Parallel()
	s := mustSigner(t, "k1")
	b := &fakeBroker{}
	msgs := []outbox.Message{
		{ID: uuid.New(), Type: "payment.created", Payload: []byte(`{"n":1}`)},
		{ID: uuid.New(), Type: "payment.refunded", Payload: []byte(`{"n":2}`)},
	}
	errs := provenance.NewPublisher(b, s).Publish(context.Background(), msgs)
	if len(errs) != 2 || errs[0] != nil || errs[1] == nil {
		t.Fatalf("errors %v, want the broker's: nil, refused", errs)
	}
	v := provenance.NewVerifier(mustSet(t, s.PublicKey()), provenance.VerifierConfig{})
	if len(b.sigs) != len(msgs) {
		t.Fatalf("the broker got %d signatures for %d messages", len(b.sigs), len(msgs))
	}
	for i, m := range b.msgs {
		if _, err := v.Verify(m.Payload, b.sigs[i]); err != nil {
			t.Errorf("message %d: %v", i, err)
		}
	}
	if _, err := v.Verify(msgs[0].Payload, b.sigs[1]); err == nil {
		t.Error("message 1's signature verifies on message 0: the signatures are not per payload")
	}
}
