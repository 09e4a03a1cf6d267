package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/tools/apiclients/ledgerclient"
	"github.com/payments-outbox/payments-outbox/tools/apiclients/paymentsclient"
	"github.com/payments-outbox/payments-outbox/tools/apiclients/webhooksclient"
	"github.com/payments-outbox/payments-outbox/tools/internal/oas"
)

// TestGeneratedClientsReadLiveAnswers calls every operation of the three
// APIs through the Go clients oapi-codegen generated from their documents
// (tools/apiclients), against the services running as docker-compose.yml
// runs them, and requires each answer to decode into the generated type of
// its status: no field the type lacks, none it loses when encoded again,
// the declared headers parsed. Every operation of each document must give
// one success, and each API at least one problem+json answer; the list of
// operations is the documents'. The exchanges also go through the
// documents' validator, as the walkthrough's do: the validator says the
// answer is what the document promises, this that a generated client can
// read it.
func TestGeneratedClientsReadLiveAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the services")
	}
	svc := startServices(t, nil, awstest.QueueConfig{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := &clientCheck{t: t, answered: map[string]map[string][]int{}}

	// A client's team builds its client this way: the base URL, and the
	// credential on every request. svc.client checks each exchange against
	// the document on the way.
	pay, err := paymentsclient.NewClientWithResponses("http://"+svc.payAddr,
		paymentsclient.WithHTTPClient(svc.client), paymentsclient.WithRequestEditorFn(bearer(demoAPIKey)))
	if err != nil {
		t.Fatal(err)
	}
	anonPay, err := paymentsclient.NewClientWithResponses("http://"+svc.payAddr, paymentsclient.WithHTTPClient(svc.client))
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledgerclient.NewClientWithResponses("http://"+svc.ledAddr,
		ledgerclient.WithHTTPClient(svc.client), ledgerclient.WithRequestEditorFn(bearer(demoLedgerToken)))
	if err != nil {
		t.Fatal(err)
	}
	wh, err := webhooksclient.NewClientWithResponses("http://"+svc.whAddr,
		webhooksclient.WithHTTPClient(svc.client), webhooksclient.WithRequestEditorFn(bearer(demoAPIKey)))
	if err != nil {
		t.Fatal(err)
	}

	// The webhook endpoint first, so that the payments below are delivered
	// to it.
	var endpoint webhooksclient.EndpointWithSecret
	{
		r, err := wh.OpenapiWithResponse(ctx, nil)
		c.read("webhooks", r, err, http.StatusOK)
		if r.YAML200.Openapi != "3.1.0" {
			t.Errorf("webhooks openapi: %q, want 3.1.0", r.YAML200.Openapi)
		}
		create := webhooksclient.CreateWebhookEndpointJSONRequestBody{Url: svc.receiverURL(), EnabledEvents: []string{"payment.created", "payment.refunded"}}
		cr, err := wh.CreateWebhookEndpointWithResponse(ctx, &webhooksclient.CreateWebhookEndpointParams{IdempotencyKey: ptr("clients-endpoint")}, create)
		c.read("webhooks", cr, err, http.StatusCreated)
		if endpoint, err = cr.JSON201.AsEndpointWithSecret(); err != nil || endpoint.Secret == "" {
			t.Fatalf("createWebhookEndpoint's 201 is no endpoint with its secret: %v", err)
		}
		// The receiver verifies each delivery with it.
		if err := os.WriteFile(svc.receiver.secretFile, []byte(endpoint.Secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		bad := webhooksclient.CreateWebhookEndpointJSONRequestBody{Url: "ftp://example.com/", EnabledEvents: []string{"*"}}
		br, err := wh.CreateWebhookEndpointWithResponse(ctx, nil, bad)
		c.read("webhooks", br, err, http.StatusUnprocessableEntity)
	}

	// payments
	var coffee, hotel paymentsclient.Payment
	{
		r, err := pay.OpenapiWithResponse(ctx, nil)
		c.read("payments", r, err, http.StatusOK)
		k, err := pay.GetApiKeyWithResponse(ctx, nil)
		c.read("payments", k, err, http.StatusOK)
		if k.JSON200.MerchantId == nil || *k.JSON200.MerchantId != "mer_1" {
			t.Errorf("getApiKey: merchant %v, want mer_1", k.JSON200.MerchantId)
		}
		ak, err := anonPay.GetApiKeyWithResponse(ctx, nil)
		c.read("payments", ak, err, http.StatusUnauthorized)

		cr, err := pay.CreatePaymentWithResponse(ctx, &paymentsclient.CreatePaymentParams{IdempotencyKey: ptr("clients-coffee")},
			paymentsclient.CreatePaymentJSONRequestBody{Amount: 1050, Currency: "BRL", PayerId: "cus_1", Description: ptr("coffee")})
		c.read("payments", cr, err, http.StatusCreated)
		coffee = *cr.JSON201
		zero, err := pay.CreatePaymentWithResponse(ctx, nil, paymentsclient.CreatePaymentJSONRequestBody{Amount: 0, Currency: "BRL", PayerId: "cus_1"})
		c.read("payments", zero, err, http.StatusUnprocessableEntity)

		g, err := pay.GetPaymentWithResponse(ctx, coffee.Id, nil)
		c.read("payments", g, err, http.StatusOK)
		gn, err := pay.GetPaymentWithResponse(ctx, uuid.New(), nil)
		c.read("payments", gn, err, http.StatusNotFound)

		rf, err := pay.RefundPaymentWithResponse(ctx, coffee.Id, nil, paymentsclient.RefundPaymentJSONRequestBody{Amount: 300})
		c.read("payments", rf, err, http.StatusCreated)
		over, err := pay.RefundPaymentWithResponse(ctx, coffee.Id, nil, paymentsclient.RefundPaymentJSONRequestBody{Amount: 800})
		c.read("payments", over, err, http.StatusConflict)

		manual := paymentsclient.Manual
		ar, err := pay.CreatePaymentWithResponse(ctx, &paymentsclient.CreatePaymentParams{IdempotencyKey: ptr("clients-hotel")},
			paymentsclient.CreatePaymentJSONRequestBody{Amount: 2000, Currency: "BRL", PayerId: "cus_1", CaptureMethod: &manual})
		c.read("payments", ar, err, http.StatusCreated)
		hotel = *ar.JSON201
		cp, err := pay.CapturePaymentWithResponse(ctx, hotel.Id, nil, paymentsclient.CapturePaymentJSONRequestBody{Amount: ptr[int64](1500)})
		c.read("payments", cp, err, http.StatusOK)
		cpAuto, err := pay.CapturePaymentWithResponse(ctx, coffee.Id, nil, paymentsclient.CapturePaymentJSONRequestBody{})
		c.read("payments", cpAuto, err, http.StatusConflict)

		tr, err := pay.CreatePaymentWithResponse(ctx, nil,
			paymentsclient.CreatePaymentJSONRequestBody{Amount: 500, Currency: "BRL", PayerId: "cus_2", CaptureMethod: &manual})
		c.read("payments", tr, err, http.StatusCreated)
		reason := paymentsclient.CancelRequestCancellationReasonAbandoned
		cl, err := pay.CancelPaymentWithResponse(ctx, tr.JSON201.Id, nil, paymentsclient.CancelPaymentJSONRequestBody{CancellationReason: &reason})
		c.read("payments", cl, err, http.StatusOK)
		clAgain, err := pay.CancelPaymentWithResponse(ctx, tr.JSON201.Id, nil, paymentsclient.CancelPaymentJSONRequestBody{})
		c.read("payments", clAgain, err, http.StatusConflict)

		l, err := pay.ListPaymentsWithResponse(ctx, &paymentsclient.ListPaymentsParams{Limit: ptr(2)})
		c.read("payments", l, err, http.StatusOK)
		if len(l.JSON200.Data) != 2 || !l.JSON200.HasMore {
			t.Errorf("listPayments limit 2: %d payments, has_more %v; want 2 and more", len(l.JSON200.Data), l.JSON200.HasMore)
		}
		ln, err := pay.ListPaymentsWithResponse(ctx, &paymentsclient.ListPaymentsParams{StartingAfter: ptr(uuid.New())})
		c.read("payments", ln, err, http.StatusBadRequest)
	}

	// ledger: the events above reach it asynchronously.
	{
		r, err := led.OpenapiWithResponse(ctx, nil)
		c.read("ledger", r, err, http.StatusOK)
		none, err := led.GetPaymentEntriesWithResponse(ctx, uuid.New(), nil)
		c.read("ledger", none, err, http.StatusNotFound)
		// The coffee's payment and its refund.
		var e *ledgerclient.GetPaymentEntriesResponse
		poll(ctx, t, "the coffee's two ledger transactions", func() bool {
			e, err = led.GetPaymentEntriesWithResponse(ctx, coffee.Id, nil)
			if err == nil && e.StatusCode() == http.StatusNotFound {
				return false // not posted yet
			}
			return err != nil || e.JSON200 == nil || len(e.JSON200.Transactions) == 2
		})
		c.read("ledger", e, err, http.StatusOK)
		// The hotel's capture.
		var mb *ledgerclient.GetMerchantBalanceResponse
		poll(ctx, t, "the hotel's capture in mer_1's balance", func() bool {
			mb, err = led.GetMerchantBalanceWithResponse(ctx, "mer_1", nil)
			if err != nil || mb.JSON200 == nil {
				return true
			}
			for _, b := range mb.JSON200.Balances {
				if b.Currency == "BRL" && b.Available == 1050-300+1500 {
					return true
				}
			}
			return false
		})
		c.read("ledger", mb, err, http.StatusOK)

		b, err := led.GetBalanceWithResponse(ctx, merchantAccount, nil)
		c.read("ledger", b, err, http.StatusOK)
		bad, err := led.GetBalanceWithResponse(ctx, "mer_1", nil) // not an account's name
		c.read("ledger", bad, err, http.StatusBadRequest)
		l, err := led.ListAccountEntriesWithResponse(ctx, merchantAccount, &ledgerclient.ListAccountEntriesParams{Limit: ptr(2)})
		c.read("ledger", l, err, http.StatusOK)
		if len(l.JSON200.Data) != 2 || !l.JSON200.HasMore {
			t.Fatalf("listAccountEntries limit 2: %d entries, has_more %v; want 2 and more", len(l.JSON200.Data), l.JSON200.HasMore)
		}
		next, err := led.ListAccountEntriesWithResponse(ctx, merchantAccount, &ledgerclient.ListAccountEntriesParams{StartingAfter: &l.JSON200.Data[1].Id})
		c.read("ledger", next, err, http.StatusOK)
		zero, err := led.ListAccountEntriesWithResponse(ctx, merchantAccount, &ledgerclient.ListAccountEntriesParams{Limit: ptr(0)})
		c.read("ledger", zero, err, http.StatusBadRequest)
	}

	// webhooks: the coffee's payment.created and payment.refunded went to
	// the endpoint.
	{
		g, err := wh.GetWebhookEndpointWithResponse(ctx, endpoint.Id, nil)
		c.read("webhooks", g, err, http.StatusOK)
		gn, err := wh.GetWebhookEndpointWithResponse(ctx, "we_"+strings.ReplaceAll(uuid.NewString(), "-", ""), nil)
		c.read("webhooks", gn, err, http.StatusNotFound)
		l, err := wh.ListWebhookEndpointsWithResponse(ctx, nil)
		c.read("webhooks", l, err, http.StatusOK)

		var a *webhooksclient.ListWebhookAttemptsResponse
		poll(ctx, t, "an attempt to deliver to the endpoint", func() bool {
			a, err = wh.ListWebhookAttemptsWithResponse(ctx, endpoint.Id, nil)
			return err != nil || a.JSON200 == nil || len(a.JSON200.Data) > 0
		})
		c.read("webhooks", a, err, http.StatusOK)
		event := a.JSON200.Data[0].EventId
		rd, err := wh.RedeliverWebhookEventWithResponse(ctx, endpoint.Id, event, nil)
		c.read("webhooks", rd, err, http.StatusAccepted)
		rdn, err := wh.RedeliverWebhookEventWithResponse(ctx, endpoint.Id, uuid.NewString(), nil)
		c.read("webhooks", rdn, err, http.StatusNotFound)
		rc, err := wh.RecoverWebhookEndpointWithResponse(ctx, endpoint.Id, nil,
			webhooksclient.RecoverWebhookEndpointJSONRequestBody{Since: time.Now().Add(-time.Hour), Limit: ptr(10)})
		c.read("webhooks", rc, err, http.StatusAccepted)
		rcBad, err := wh.RecoverWebhookEndpointWithResponse(ctx, endpoint.Id, nil,
			webhooksclient.RecoverWebhookEndpointJSONRequestBody{Since: time.Now().Add(-time.Hour), StartingAfter: ptr("not-an-event-id")})
		c.read("webhooks", rcBad, err, http.StatusBadRequest)
		la, err := wh.ListWebhookAttemptsWithResponse(ctx, endpoint.Id, &webhooksclient.ListWebhookAttemptsParams{Limit: ptr(101)})
		c.read("webhooks", la, err, http.StatusBadRequest)

		rot, err := wh.RotateWebhookEndpointSecretWithResponse(ctx, endpoint.Id, nil,
			webhooksclient.RotateWebhookEndpointSecretJSONRequestBody{ExpireCurrentInSeconds: ptr[int64](60)})
		c.read("webhooks", rot, err, http.StatusOK)
		if rot.JSON200.Secret == endpoint.Secret {
			t.Error("rotateWebhookEndpointSecret answered the same secret")
		}
		rotBad, err := wh.RotateWebhookEndpointSecretWithResponse(ctx, endpoint.Id, nil,
			webhooksclient.RotateWebhookEndpointSecretJSONRequestBody{ExpireCurrentInSeconds: ptr[int64](0)})
		c.read("webhooks", rotBad, err, http.StatusUnprocessableEntity)

		d, err := wh.DeleteWebhookEndpointWithResponse(ctx, endpoint.Id, nil)
		c.read("webhooks", d, err, http.StatusOK)
		again, err := wh.DeleteWebhookEndpointWithResponse(ctx, endpoint.Id, nil)
		c.read("webhooks", again, err, http.StatusOK) // the same answer
		gone, err := wh.RotateWebhookEndpointSecretWithResponse(ctx, endpoint.Id, nil, webhooksclient.RotateWebhookEndpointSecretJSONRequestBody{})
		c.read("webhooks", gone, err, http.StatusConflict)
	}

	c.coverage(map[string][]byte{"payments": apidoc.Payments(), "ledger": apidoc.Ledger(), "webhooks": apidoc.Webhooks()})
}

// clientCheck reads generated clients' answers and records, per API, the
// statuses each operation answered.
type clientCheck struct {
	t        *testing.T
	answered map[string]map[string][]int // API → operationId → statuses read
}

// bodyField is a generated response's field for one status's decoded body:
// JSON200, ApplicationproblemJSON404, YAML200.
var bodyField = regexp.MustCompile(`^(JSON|ApplicationproblemJSON|YAML)(\d{3})$`)

// read requires res, a generated client's *<Operation>Response, to be the
// answer of status want, decoded: the field of that status's body set (or,
// for a status without a body, an empty body), the body decoded again
// strictly into the field's type — a field the type does not have fails —
// and encoded back to the same JSON, and the status's declared headers
// parsed. It stops the test on failure: what follows reads the answer.
func (c *clientCheck) read(api string, res any, err error, want int) {
	t := c.t
	t.Helper()
	v := reflect.ValueOf(res)
	if err != nil || v.IsNil() {
		t.Fatalf("%s: %T: %v", api, res, err)
	}
	v = v.Elem()
	op := strings.TrimSuffix(v.Type().Name(), "Response")
	op = string(unicode.ToLower(rune(op[0]))) + op[1:] // the operationId
	hr := v.FieldByName("HTTPResponse").Interface().(*http.Response)
	body := v.FieldByName("Body").Bytes()
	name := api + " " + op
	if hr.StatusCode != want {
		t.Fatalf("%s: %s, want %d: %s", name, hr.Status, want, body)
	}
	if c.answered[api] == nil {
		c.answered[api] = map[string][]int{}
	}
	c.answered[api][op] = append(c.answered[api][op], want)

	var typed reflect.Value
	for i := range v.NumField() {
		if m := bodyField.FindStringSubmatch(v.Type().Field(i).Name); m != nil && m[2] == strconv.Itoa(want) {
			typed = v.Field(i)
		}
	}
	switch {
	case !typed.IsValid():
		if len(body) != 0 {
			t.Fatalf("%s: %d has no body in the document, the service sent %s", name, want, body)
		}
	case typed.IsNil():
		t.Fatalf("%s: the %d answer (%s) did not decode into %s: %s", name, want, hr.Header.Get("Content-Type"), typed.Type().Elem(), body)
	case strings.Contains(hr.Header.Get("Content-Type"), "json"):
		strict := reflect.New(typed.Type().Elem())
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(strict.Interface()); err != nil {
			t.Fatalf("%s: the %d answer has what %s lacks: %v\n%s", name, want, typed.Type().Elem(), err, body)
		}
		again, err := json.Marshal(strict.Interface())
		if err != nil {
			t.Fatal(err)
		}
		if !sameJSON(body, again) {
			t.Errorf("%s: the %d answer does not survive %s:\nsent:    %s\nencoded: %s", name, want, typed.Type().Elem(), body, again)
		}
	}
	if h := v.FieldByName("Headers" + strconv.Itoa(want)); h.IsValid() {
		if h.IsNil() {
			t.Fatalf("%s: the %d answer's headers were not parsed", name, want)
		}
		// A required header is a plain string field, an optional one a pointer.
		for i := range h.Elem().NumField() {
			if f := h.Elem().Field(i); f.Kind() == reflect.String && f.String() == "" {
				t.Errorf("%s: the %d answer has no %s header", name, want, h.Elem().Type().Field(i).Name)
			}
		}
	}
}

// coverage requires every operation of each API's document to have given a
// success, and each API a problem+json answer.
func (c *clientCheck) coverage(docs map[string][]byte) {
	t := c.t
	t.Helper()
	for api, doc := range docs {
		ops, err := oas.Operations(doc)
		if err != nil {
			t.Fatalf("%s: %v", api, err)
		}
		problems := 0
		for _, op := range ops {
			statuses := c.answered[api][op.ID]
			if !slices.ContainsFunc(statuses, func(s int) bool { return s < 300 }) {
				t.Errorf("%s: no success of %s was read through the generated client: add a call above", api, op)
			}
			problems += len(slices.DeleteFunc(slices.Clone(statuses), func(s int) bool { return s < 400 }))
		}
		if problems == 0 {
			t.Errorf("%s: no problem answer was read through the generated client", api)
		}
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// poll calls done until it reports true, and fails the test at the
// context's end.
func poll(ctx context.Context, t *testing.T, what string, done func() bool) {
	t.Helper()
	for !done() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// bearer is a generated client's request editor that sends credential.
func bearer(credential string) func(context.Context, *http.Request) error {
	return func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+credential)
		return nil
	}
}

func ptr[T any](v T) *T { return &v }
