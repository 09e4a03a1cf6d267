package paymentsapi_test

import (
	"net/http"
	"testing"
)

// TestAuthorizeCaptureCancel: the manual payment's routes, and the answer to
// each transition its state does not allow.
func TestAuthorizeCaptureCancel(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t)
	post := func(path, body string) response {
		ct := ""
		if body != "" {
			ct = "application/json"
		}
		return do(t, srv, http.MethodPost, path, ct, body)
	}
	authorize := func() string {
		t.Helper()
		res := post("/payments", `{"amount": 2500, "currency": "BRL", "payer_id": "cus_1", "merchant_id": "mer_1", "capture_method": "manual"}`)
		if res.status != 201 {
			t.Fatalf("authorize: %d %s", res.status, res.body)
		}
		p := res.json(t)
		if p["status"] != "authorized" || p["capture_method"] != "manual" || p["amount_captured"] != 0.0 || p["capture_before"] == nil {
			t.Fatalf("authorize: got %v, want authorized, manual, nothing captured, with capture_before", p)
		}
		return p["id"].(string)
	}

	automatic := create(t, srv).json(t)
	if automatic["capture_method"] != "automatic" || automatic["amount_captured"] != 1050.0 || automatic["capture_before"] != nil {
		t.Errorf("an automatic payment: got %v, want capture_method automatic, all of it captured, no capture_before", automatic)
	}

	id := authorize()
	assertProblem(t, post("/payments/"+id+"/refunds", `{"amount": 1}`), 409, "/problems/invalid-transition")
	assertProblem(t, post("/payments/"+id+"/capture", `{"amount": 2501}`), 409, "/problems/capture-exceeds-amount")
	assertProblem(t, post("/payments/"+id+"/capture", `{"amount": 0}`), 422, "/problems/validation-failed")
	res := post("/payments/"+id+"/capture", `{"amount": 2000}`)
	if res.status != 200 {
		t.Fatalf("capture: %d %s", res.status, res.body)
	}
	if p := res.json(t); p["status"] != "captured" || p["amount_captured"] != 2000.0 || p["captured_at"] == nil {
		t.Errorf("capture: got %v, want captured, 2000, with captured_at", p)
	}
	assertProblem(t, post("/payments/"+id+"/capture", ""), 409, "/problems/invalid-transition")
	assertProblem(t, post("/payments/"+id+"/cancel", ""), 409, "/problems/invalid-transition")
	assertProblem(t, post("/payments/"+id+"/refunds", `{"amount": 2001}`), 409, "/problems/refund-exceeds-amount")
	if res := post("/payments/"+id+"/refunds", `{"amount": 2000}`); res.status != 201 || res.json(t)["status"] != "refunded" {
		t.Errorf("refund of the whole capture: %d %s, want 201 refunded", res.status, res.body)
	}

	id = authorize()
	assertProblem(t, post("/payments/"+id+"/cancel", `{"cancellation_reason": "expired"}`), 422, "/problems/validation-failed")
	res = post("/payments/"+id+"/cancel", "")
	if res.status != 200 {
		t.Fatalf("cancel: %d %s", res.status, res.body)
	}
	if p := res.json(t); p["status"] != "canceled" || p["cancellation_reason"] != "requested_by_customer" || p["canceled_at"] == nil {
		t.Errorf("cancel: got %v, want canceled for requested_by_customer, with canceled_at", p)
	}
	assertProblem(t, post("/payments/"+id+"/capture", ""), 409, "/problems/invalid-transition")
	assertProblem(t, post("/payments/"+id+"/cancel", ""), 409, "/problems/invalid-transition")
	assertProblem(t, post("/payments/"+id+"/capture", `{"amount": 1`), 400, "/problems/malformed-body")

	assertProblem(t, post("/payments", `{"amount": 1, "currency": "BRL", "payer_id": "cus_1", "merchant_id": "mer_1", "capture_method": "later"}`), 422, "/problems/validation-failed")
}
