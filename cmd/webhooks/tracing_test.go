package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// TestTracingFromTheEnvironment: with OTEL_EXPORTER_OTLP_ENDPOINT set, the
// webhooks service's decorators are wired: an event that carries a trace
// context is recorded, fanned out and delivered, and the spans of each step
// reach the collector by OTLP, at the latest when the service shuts down.
// The OpenTelemetry SDK reads the process environment itself, so the test
// sets it there too.
func TestTracingFromTheEnvironment(t *testing.T) {
	var (
		mu       sync.Mutex
		exported []byte
	)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			exported = append(exported, b...)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")

	s := startServiceWith(t, true, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL})
	r := newReceiver(t, func(int) int { return http.StatusNoContent })
	s.endpoint(t, "mer_a", r, webhooks.AllEvents)

	id, paymentID := uuid.NewString(), uuid.NewString()
	body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","data":{"payment_id":%q,"amount":1050,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_a"}}`,
		id, paymentID, time.Now().UTC().Format(time.RFC3339Nano), paymentID)
	if _, err := s.tq.SNS.Publish(context.Background(), &sns.PublishInput{TopicArn: aws.String(s.tq.TopicARN), Message: aws.String(body),
		MessageAttributes: awstest.SNSAttributes(testKey.Sign([]byte(body)))}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the delivery", s.logs, func() bool { return len(r.received()) >= 1 })
	s.stop(t) // flushes the spans not exported yet

	mu.Lock()
	defer mu.Unlock()
	// OTLP/protobuf carries a span's name as its bytes.
	for _, name := range []string{"process message", "webhooks transaction", "enqueue webhook deliveries", "claim webhook deliveries", "send webhook"} {
		if !bytes.Contains(exported, []byte(name)) {
			t.Errorf("no %q span reached the collector (%d bytes exported)", name, len(exported))
		}
	}
}
