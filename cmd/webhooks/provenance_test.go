package main

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/application/provenance/provenancetest"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// testKey stands for the payments service's signing key in these tests:
// the services they run hold its public key (getenvFrom).
var testKey = provenancetest.NewSigner("payments-test")

// TestForgedEventsAreNeverDelivered runs the webhooks service as it serves
// and puts forgeries straight on its queue — a payment.captured of
// 99,999,999.00 USD for a payment that never existed (the forgery an
// outside attack had the service deliver, validly signed, to the merchant
// it named), unsigned, signed by another key, by a key nobody holds, with a
// genuine event's signature, with half a signature, and the genuine event
// with its amount changed — then the genuine event. The merchant's endpoint
// is sent the genuine event alone, as signed; each forgery waits in the DLQ
// with its reason, counted by it.
func TestForgedEventsAreNeverDelivered(t *testing.T) {
	t.Parallel()
	s := startService(t, true)
	ctx := context.Background()
	r := newReceiver(t, func(int) int { return 204 })
	s.endpoint(t, "mer_a", r, webhooks.AllEvents)

	event := func(typ string, amount int64, currency string) []byte {
		paymentID := uuid.NewString()
		return fmt.Appendf(nil, `{"specversion":"1.0","id":%q,"type":%q,"dataschema":"https://payments-outbox.example/schemas/events/%[2]s/v1.json","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","data":{"payment_id":%q,"amount":%d,"currency":%q,"payer_id":"cus_1","merchant_id":"mer_a"}}`,
			uuid.NewString(), typ, paymentID, time.Now().UTC().Format(time.RFC3339Nano), paymentID, amount, currency)
	}
	genuine := event("payment.created", 1050, "BRL")
	forged := event("payment.created", 9_999_999_900, "USD")
	tampered := bytes.Replace(genuine, []byte(`"amount":1050`), []byte(`"amount":99999999`), 1)
	sig := testKey.Sign(genuine)
	forgeries := provenancetest.Forgeries(sig, tampered, forged)
	for _, f := range forgeries {
		if _, err := s.tq.SQS.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(s.tq.QueueURL),
			MessageBody: aws.String(string(f.Body)), MessageAttributes: awstest.SQSAttributes(f.Signature)}); err != nil {
			t.Fatal(err)
		}
	}
	dlq := s.tq.Drain(t, s.tq.DLQURL, len(forgeries), time.Minute)
	if _, err := s.tq.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(s.tq.TopicARN), Message: aws.String(string(genuine)),
		MessageAttributes: awstest.SNSAttributes(sig)}); err != nil {
		t.Fatal(err)
	}
	// Every message received — recorded, a duplicate, or refused — and
	// every one recorded fanned out and sent to the endpoint.
	eventually(t, "every message handled and every recorded event sent", s.logs, func() bool {
		m := s.metrics(t)
		handled := sum(m, "webhooks_messages_processed_total{") + sum(m, "webhooks_messages_unverified_total{")
		recorded := sum(m, `webhooks_messages_processed_total{outcome="recorded"}`)
		return handled >= float64(len(forgeries)+1) && recorded >= 1 &&
			sum(m, `inbox_processed_total{outcome="applied"}`) >= recorded && float64(len(r.received())) >= recorded
	})
	got := r.received()
	if len(got) != 1 || got[0].body != string(genuine) || got[0].verified[0] != nil {
		t.Errorf("the merchant's endpoint was sent %d requests (%+v); want the genuine event alone, as signed", len(got), got)
	}

	if len(dlq) != len(forgeries) {
		t.Fatalf("the DLQ holds %d messages, want the %d forgeries; logs:\n%s", len(dlq), len(forgeries), s.logs)
	}
	reasons := map[string]int{}
	for _, m := range dlq {
		label, _, _ := strings.Cut(aws.ToString(m.MessageAttributes[sqs.AttrRejected].StringValue), ":")
		reasons[label]++
	}
	want := map[string]int{}
	for _, f := range forgeries {
		want[f.Reason]++
	}
	m := s.metrics(t)
	for reason, n := range want {
		if reasons[reason] != n {
			t.Errorf("the DLQ holds %d messages refused for %s, want %d (all: %v)", reasons[reason], reason, n, reasons)
		}
		if series := fmt.Sprintf(`webhooks_messages_unverified_total{reason=%q} %d`, reason, n); !strings.Contains(m, series) {
			t.Errorf("the metrics lack %s", series)
		}
	}
}

// sum adds up the values of the series in the metrics text m whose name and
// labels start with prefix.
func sum(m, prefix string) float64 {
	var total float64
	for line := range strings.Lines(m) {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			total += v
		}
	}
	return total
}
