package payments

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strconv"
)

// Write is one use case that changes payments under an Idempotency-Key: Op
// names it, first in every fingerprint of its requests, and Request is the
// type of its input.
type Write struct {
	Op      string
	Request reflect.Type
}

// writes is every use case that changes payments, in one table. A request is
// fingerprinted through its entry (fingerprint), so a write left out of the
// table cannot take a key: its first keyed request fails. The tests walk the
// table as the HTTP API's tests walk its routes: every method of Service that
// takes a key must be in it, every field of each request must change its
// fingerprint, and every POST route of the API must serve one of its writes
// (adapters/paymentsapi).
var writes = []Write{
	{"create", reflect.TypeFor[CreatePayment]()},
	{"refund", reflect.TypeFor[RefundPayment]()},
	{"capture", reflect.TypeFor[CapturePayment]()},
	{"cancel", reflect.TypeFor[CancelPayment]()},
}

// Writes returns the table of writes.
func Writes() []Write { return append([]Write(nil), writes...) }

// notFingerprinted are the fields of a request that say who asks and under
// which key, not what is asked: the key's scope and the key itself.
var notFingerprinted = map[string]bool{"Principal": true, "IdempotencyKey": true}

// idempotencyKey validates merchant's key and fingerprints req, a request of
// the table of writes as its use case normalised it; an empty key means the
// request is not idempotent and yields nil.
func idempotencyKey(merchant, key string, req any) (*IdempotencyKey, error) {
	if key == "" {
		return nil, nil
	}
	if len(key) > MaxKeyLen {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidKey, MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return nil, fmt.Errorf("%w: only printable ASCII without spaces is allowed", ErrInvalidKey)
		}
	}
	fp, err := fingerprint(req)
	if err != nil {
		return nil, err
	}
	return &IdempotencyKey{Merchant: merchant, Key: key, Fingerprint: fp}, nil
}

// fingerprint hashes the op of req's write and every field of req but
// those notFingerprinted, in the order the request type declares them: two
// requests of one write have the same fingerprint exactly when they ask for
// the same change. The fields are read by reflection, so that a field added
// to a request is part of its fingerprint without anyone remembering to add
// it — a retry with the same key and another value of it is refused, not
// answered with the first request's result.
func fingerprint(req any) (string, error) {
	v := reflect.ValueOf(req)
	var op string
	for _, w := range writes {
		if w.Request == v.Type() {
			op = w.Op
		}
	}
	if op == "" {
		return "", fmt.Errorf("fingerprint: %s is not in the table of writes (application/payments/writes.go)", v.Type())
	}
	parts := []string{op}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if notFingerprinted[f.Name] {
			continue
		}
		switch fv := v.Field(i); fv.Kind() {
		case reflect.String:
			parts = append(parts, fv.String())
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			parts = append(parts, strconv.FormatInt(fv.Int(), 10))
		default:
			return "", fmt.Errorf("fingerprint: %s.%s is a %s: teach fingerprint how to write it", v.Type(), f.Name, f.Type)
		}
	}
	h := sha256.New()
	for _, p := range parts {
		// Length-prefix each part so ("ab","c") and ("a","bc") differ.
		fmt.Fprintf(h, "%d:%s|", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
