// Package provenancetest holds what the tests of every consumer put on a
// queue in the payments service's place: a key to sign with, and the
// forgeries each consumer must refuse.
package provenancetest

import (
	"github.com/payments-outbox/payments-outbox/application/provenance"
)

// NewSigner returns a new key under id; it panics if crypto/rand fails,
// which no test can recover from.
func NewSigner(id string) *provenance.Signer {
	s, err := provenance.GenerateSigner(id)
	if err != nil {
		panic(err)
	}
	return s
}

// Forgery is a message that claims to be the payments service's and is not:
// its body, the signature it carries, and the reason (a provenance.Reasons
// label) a consumer must refuse it for.
type Forgery struct {
	Name      string
	Body      []byte
	Signature provenance.Signature
	Reason    string
}

// Forgeries are the ways to put on a queue an event the payments service
// (whose key id is sig.KeyID) did not publish, given sig, its genuine
// signature of some event's body, that body tampered with, and forged, a
// body of the forger's own: forged unsigned; signed by another key under
// the payments key's id; signed by a key nobody holds; sig carried by the
// tampered body (a valid signature over other bytes); sig replayed on the
// forged body (another event's signature); and half a signature.
func Forgeries(sig provenance.Signature, tampered, forged []byte) []Forgery {
	impostor, stranger := NewSigner(sig.KeyID), NewSigner("nobody-holds-"+sig.KeyID)
	return []Forgery{
		{"no signature", forged, provenance.Signature{}, "missing_signature"},
		{"signed by another key under the payments key's id", forged, impostor.Sign(forged), "bad_signature"},
		{"signed by a key nobody holds", forged, stranger.Sign(forged), "unknown_key"},
		{"a valid signature over other bytes", tampered, sig, "bad_signature"},
		{"another event's signature replayed", forged, sig, "bad_signature"},
		{"half a signature", forged, provenance.Signature{KeyID: sig.KeyID}, "malformed_signature"},
	}
}
