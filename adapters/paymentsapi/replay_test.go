package paymentsapi_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/paymentsapi"
)

// TestReplayAnswersEveryField: a POST and its retry with the same
// Idempotency-Key answer alike, field by field, for every field of the
// answer — found by reflection on the response types, so a field added to
// the answer fails here until the idempotency store keeps it
// (adapters/postgres/paymentstore, storedResult). The retries of the refund
// and the capture come after the payment changed again, so a replay that
// read the payment's current row would show too. Every field must be set in
// some first answer: one left at its zero value would pass however it is
// stored. No one payment sets them all (a canceled one is never captured):
// the exchanges are an automatic payment refunded, and a manual one
// captured then refunded, and one canceled.
func TestReplayAnswersEveryField(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t)
	paymentFields, refundFields := paymentsapi.ResponseFields()

	post := func(path, body, key string) response {
		return do(t, srv, "POST", path, "application/json", body, "Idempotency-Key", key)
	}
	const manualBody = `{"amount": 2500, "currency": "BRL", "payer_id": "cus_1", "merchant_id": "mer_1", "description": "tea", "capture_method": "manual"}`
	first := create(t, srv, "Idempotency-Key", "create-every-field")
	id, _ := first.json(t)["id"].(string)
	refund := func(amount, key string) response {
		return post("/payments/"+id+"/refunds", `{"amount": `+amount+`}`, key)
	}
	refunded := refund("100", "refund-every-field")
	if res := refund("200", "refund-later"); res.status != 201 {
		t.Fatalf("second refund: %d %s", res.status, res.body)
	}

	authorized := post("/payments", manualBody, "authorize-every-field")
	manualID, _ := authorized.json(t)["id"].(string)
	capture := func() response {
		return post("/payments/"+manualID+"/capture", `{"amount": 2000}`, "capture-every-field")
	}
	captured := capture()
	if res := post("/payments/"+manualID+"/refunds", `{"amount": 300}`, "refund-captured"); res.status != 201 {
		t.Fatalf("refund of the capture: %d %s", res.status, res.body)
	}

	toCancel := post("/payments", manualBody, "authorize-to-cancel")
	cancelID, _ := toCancel.json(t)["id"].(string)
	cancel := func() response {
		return post("/payments/"+cancelID+"/cancel", `{"cancellation_reason": "fraudulent"}`, "cancel-every-field")
	}
	canceled := cancel()

	exchanges := []struct {
		name          string
		status        int
		first, replay response
		fields        []string
	}{
		{"create", 201, first, create(t, srv, "Idempotency-Key", "create-every-field"), paymentFields},
		{"refund", 201, refunded, refund("100", "refund-every-field"), paymentFields},
		{"authorize", 201, authorized, post("/payments", manualBody, "authorize-every-field"), paymentFields},
		{"capture", 200, captured, capture(), paymentFields},
		{"cancel", 200, canceled, cancel(), paymentFields},
	}
	set := map[string]bool{} // fields some first answer sets
	for _, x := range exchanges {
		if x.first.status != x.status || x.replay.status != x.status || x.replay.header.Get(paymentsapi.ReplayedHeader) != "true" {
			t.Fatalf("%s: %d, then %d replayed=%q; want %d and its replay; body %s", x.name, x.first.status, x.replay.status, x.replay.header.Get(paymentsapi.ReplayedHeader), x.status, x.first.body)
		}
		want, got := x.first.json(t), x.replay.json(t)
		compareFields(t, x.name, want, got, x.fields, set, "")
		if x.name == "refund" {
			w, _ := want["refund"].(map[string]any)
			g, _ := got["refund"].(map[string]any)
			compareFields(t, "refund", w, g, refundFields, set, "refund.")
		}
	}
	names := slices.Clone(paymentFields)
	for _, f := range refundFields {
		names = append(names, "refund."+f)
	}
	for _, name := range names {
		if !set[name] {
			t.Errorf("no first answer sets %q, so a replay that dropped it would pass: make a request of this test set it", name)
		}
	}
}

// compareFields requires got to hold every field of want alike, and
// records in set the fields want gives a value other than their zero.
func compareFields(t *testing.T, what string, want, got map[string]any, fields []string, set map[string]bool, prefix string) {
	t.Helper()
	for _, f := range fields {
		w, ok := want[f]
		if ok && w != nil && !reflect.ValueOf(w).IsZero() {
			set[prefix+f] = true
		}
		if g, gok := got[f]; gok != ok || !reflect.DeepEqual(w, g) {
			t.Errorf("%s: the replay answers %q = %v, the first answer %v: the idempotency store (paymentstore's storedResult) does not keep it", what, prefix+f, g, w)
		}
	}
}
