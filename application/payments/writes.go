package payments

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/payments-outbox/payments-outbox/application/idempotency"
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
func idempotencyKey(merchant, key string, req any) (*idempotency.Key, error) {
	if key == "" {
		return nil, nil
	}
	parts, err := fingerprinted(req)
	if err != nil {
		return nil, err
	}
	return idempotency.NewKey(merchant, key, parts...)
}

// fingerprinted is what a fingerprint of req hashes: the op of req's write
// and every field of req but those notFingerprinted, in the order the
// request type declares them. Two requests of one write have the same
// fingerprint exactly when they ask for the same change. The fields are
// read by reflection, so that a field added to a request is part of its
// fingerprint without anyone remembering to add it — a retry with the same
// key and another value of it is refused, not answered with the first
// request's result.
func fingerprinted(req any) ([]string, error) {
	v := reflect.ValueOf(req)
	var op string
	for _, w := range writes {
		if w.Request == v.Type() {
			op = w.Op
		}
	}
	if op == "" {
		return nil, fmt.Errorf("fingerprint: %s is not in the table of writes (application/payments/writes.go)", v.Type())
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
			return nil, fmt.Errorf("fingerprint: %s.%s is a %s: teach fingerprint how to write it", v.Type(), f.Name, f.Type)
		}
	}
	return parts, nil
}
