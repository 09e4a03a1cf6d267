package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/application/provenance/provenancetest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// testKey stands for the payments service's signing key in these tests:
// the ledgers they run hold its public key (getenvFrom).
var testKey = provenancetest.NewSigner("payments-test")

// TestForgedEventsAreNeverPosted runs the ledger as it serves and puts
// forgeries straight on its queue beside an event the payments service
// signed: a payment nobody made, of 99,999,999.00 USD for mer_victim (the
// forgery an outside attack had the ledger post), unsigned, signed by
// another key, by a key nobody holds, with the genuine event's signature,
// with half a signature; and the genuine event with its amount changed.
// The genuine event posts, as signed; nothing of any forgery is posted or
// recorded; each waits in the DLQ with its reason, counted by it.
func TestForgedEventsAreNeverPosted(t *testing.T) {
	t.Parallel()
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{})
	dbURL := pgtest.NewDatabase(t)
	env := map[string]string{
		"DATABASE_URL": dbURL, "HTTP_ADDR": "127.0.0.1:0", "OPS_ADDR": "127.0.0.1:0", "LEDGER_API_TOKENS": operatorToken,
		"AWS_ENDPOINT_URL": awstest.Endpoint(t), "AWS_REGION": tq.Config.Region,
		"LEDGER_QUEUE_URL": tq.QueueURL, "LEDGER_DLQ_URL": tq.DLQURL, "LEDGER_WAIT_TIME": "1s",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listening := make(chan addrs, 1)
	done := make(chan error, 1)
	logs := &logtest.Buffer{}
	go func() { done <- run(ctx, nil, getenvFrom(env), logs, listening) }()
	var addr addrs
	select {
	case addr = <-listening:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, logs)
	case <-time.After(time.Minute):
		t.Fatal("the server did not start")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run after shutdown: %v", err)
		}
	}()

	event := func(amount int64, currency, merchant string) (paymentID string, body []byte) {
		paymentID = uuid.NewString()
		return paymentID, fmt.Appendf(nil, `{"specversion":"1.0","id":%q,"type":"payment.created","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":%q,"amount":%d,"currency":%q,"payer_id":"cus_1","merchant_id":%q}}`,
			uuid.NewString(), paymentID, time.Now().UTC().Format(time.RFC3339Nano), paymentID, amount, currency, merchant)
	}
	merchant := "mer_" + uuid.NewString()[:8]
	genuinePayment, genuine := event(1050, "BRL", merchant)
	forgedPayment, forged := event(9_999_999_900, "USD", "mer_victim_"+merchant[4:])
	tampered := bytes.Replace(genuine, []byte(`"amount":1050`), []byte(`"amount":99999999`), 1)
	sig := testKey.Sign(genuine)
	forgeries := provenancetest.Forgeries(sig, tampered, forged)
	for _, f := range forgeries {
		if _, err := tq.SQS.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(tq.QueueURL),
			MessageBody: aws.String(string(f.Body)), MessageAttributes: awstest.SQSAttributes(f.Signature)}); err != nil {
			t.Fatal(err)
		}
	}
	dlq := tq.Drain(t, tq.DLQURL, len(forgeries), time.Minute)
	// The genuine event last: the tampered copy of it, had it been posted,
	// would have made the genuine one a duplicate.
	if _, err := tq.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(tq.TopicARN), Message: aws.String(string(genuine)),
		MessageAttributes: awstest.SNSAttributes(sig)}); err != nil {
		t.Fatal(err)
	}

	client := &http.Client{Transport: bearer(operatorToken, http.DefaultTransport)}
	get := func(path string) (int, string) {
		res, err := client.Get("http://" + addr.API + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if code, _ := get("/payments/" + genuinePayment + "/entries"); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the genuine payment was never posted; logs:\n%s", logs)
		}
	}
	if _, body := get("/payments/" + genuinePayment + "/entries"); !strings.Contains(body, `"amount":-1050`) || strings.Contains(body, "99999999") {
		t.Errorf("the genuine payment's entries: %s; want its own 1050, signed, not the tampered amount", body)
	}
	if code, body := get("/payments/" + forgedPayment + "/entries"); code != http.StatusNotFound {
		t.Errorf("the forged payment's entries: %d %s, want 404: posted nowhere", code, body)
	}

	if len(dlq) != len(forgeries) {
		t.Fatalf("the DLQ holds %d messages, want the %d forgeries; logs:\n%s", len(dlq), len(forgeries), logs)
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
	for reason, n := range want {
		if reasons[reason] != n {
			t.Errorf("the DLQ holds %d messages refused for %s, want %d (all: %v)", reasons[reason], reason, n, reasons)
		}
		if series := fmt.Sprintf(`ledger_messages_unverified_total{reason=%q} %d`, reason, n); !strings.Contains(scrape(t, addr.Ops), series) {
			t.Errorf("the metrics lack %s", series)
		}
	}
	if strings.Contains(logs.String(), "poison") {
		t.Errorf("a forgery took the poison path:\n%s", logs)
	}
}

func scrape(t *testing.T, ops string) string {
	t.Helper()
	res, err := http.Get("http://" + ops + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}
