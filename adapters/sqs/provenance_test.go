package sqs_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/sns"
	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/provenance"
	"github.com/payments-outbox/payments-outbox/application/provenance/provenancetest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// keys is the payments service's signer and a verifier of its public key.
func keys(t testing.TB, acceptUnsigned bool) (*provenance.Signer, *provenance.Verifier) {
	t.Helper()
	s := provenancetest.NewSigner("k1")
	set, err := provenance.NewKeySet(s.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	return s, provenance.NewVerifier(set, provenance.VerifierConfig{AcceptUnsigned: acceptUnsigned})
}

// TestForgedMessagesGoToTheDLQWithTheirReason puts the payments service's
// signed event through the topic and forgeries straight on the queue: the
// signed one is posted, and each forgery is posted nowhere, recorded in no
// inbox, and waits in the DLQ with its reason, counted by it.
func TestForgedMessagesGoToTheDLQWithTheirReason(t *testing.T) {
	t.Parallel()
	r := newRig(t, awstest.QueueConfig{})
	signer, verifier := keys(t, false)
	r.verifier = verifier
	r.start(t, r.tq.SQS, 2)

	genuine := newPayment(1050, "cus_1", "mer_1").body()
	pub := provenance.NewPublisher(sns.NewPublisher(awssns.NewFromConfig(r.tq.Config), r.tq.TopicARN, sns.Config{InFlight: 1}), signer)
	if errs := pub.Publish(context.Background(), []outbox.Message{{ID: uuid.New(), Type: "payment.created", Payload: genuine}}); errs[0] != nil {
		t.Fatalf("publish: %v", errs[0])
	}
	// F-02's and F-03's: a payment nobody made, of 99,999,999.00 USD.
	forged := newPayment(9_999_999_900, "cus_forger", "mer_victim").body()
	tampered := bytes.Replace(genuine, []byte(`"amount":1050`), []byte(`"amount":1051`), 1)
	fs := provenancetest.Forgeries(signer.Sign(genuine), tampered, forged)
	for _, f := range fs {
		if _, err := r.tq.SQS.SendMessage(context.Background(), &awssqs.SendMessageInput{
			QueueUrl: aws.String(r.tq.QueueURL), MessageBody: aws.String(string(f.Body)), MessageAttributes: awstest.SQSAttributes(f.Signature),
		}); err != nil {
			t.Fatal(err)
		}
	}

	dlq := r.tq.Drain(t, r.tq.DLQURL, len(fs), time.Minute)
	waitFor(t, time.Minute, "the genuine event applied", func() bool {
		return r.metric(t, "ledger_messages_processed_total", "outcome", "applied") >= 1
	})
	if n := r.ledgerTransactions(t); n != 1 {
		t.Errorf("ledger transactions: got %d, want 1: the genuine event's alone", n)
	}
	var inboxRows int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM inbox_messages`).Scan(&inboxRows); err != nil {
		t.Fatal(err)
	}
	if inboxRows != 1 {
		t.Errorf("inbox rows: got %d, want 1: no forgery is recorded", inboxRows)
	}
	if len(dlq) != len(fs) {
		t.Fatalf("the DLQ holds %d messages, want the %d forgeries", len(dlq), len(fs))
	}
	want := map[string]int{}
	for _, f := range fs {
		want[string(f.Body)+"|"+f.Reason]++
	}
	for _, m := range dlq {
		reason := aws.ToString(m.MessageAttributes[sqs.AttrRejected].StringValue)
		label, _, _ := strings.Cut(reason, ":")
		key := aws.ToString(m.Body) + "|" + label
		if want[key] == 0 {
			t.Errorf("the DLQ holds %s with reason %q: no forgery of that body was refused for it", aws.ToString(m.Body), reason)
			continue
		}
		want[key]--
		if aws.ToString(m.MessageAttributes[sqs.AttrSenderID].StringValue) == "" {
			t.Errorf("%s: no %s attribute in the DLQ", reason, sqs.AttrSenderID)
		}
	}
	counts := map[string]float64{}
	for _, f := range fs {
		counts[f.Reason]++
	}
	for reason, n := range counts {
		if got := r.metric(t, "ledger_messages_unverified_total", "reason", reason); got != n {
			t.Errorf("ledger_messages_unverified_total{reason=%q}: got %v, want %v", reason, got, n)
		}
	}
	if got := r.metric(t, "ledger_processing_failures_total", "reason", "poison"); got != 0 {
		t.Errorf("poison failures: got %v, want 0: a forgery goes to the DLQ at once, not by its receive count", got)
	}
}

// TestAnUnverifiedMessageNeverReachesTheHandler runs the consumer on the
// in-memory SQS: a forgery is copied to the DLQ, its attributes and its
// reason beside it, deleted from the queue, and never handled; on a FIFO
// DLQ the copy keeps its message group; when the copy fails the message
// takes the poison path instead; and while unsigned messages are accepted,
// an unsigned one is handled and counted.
func TestAnUnverifiedMessageNeverReachesTheHandler(t *testing.T) {
	t.Parallel()
	signer, verifier := keys(t, false)
	_, accepting := keys(t, true)
	good := []byte("ok good")
	run := func(t *testing.T, v *provenance.Verifier, dlq string, msgs ...types.Message) (*fakeSQS, *fakeHandler, *prometheus.Registry) {
		t.Helper()
		f := newFakeSQS()
		for _, m := range msgs {
			f.putMessage("q", m)
		}
		h := &fakeHandler{sqs: f}
		reg := prometheus.NewRegistry()
		c := sqs.NewConsumer(f, h, "q", logtest.Discard(), sqs.NewMetrics(reg, "ledger"), time.Now, sqs.Config{DLQURL: dlq, Workers: 1, WaitTime: time.Second, Verifier: v})
		stop, wait := runConsumer(t, c)
		// A stop lets the batch in hand finish: once the one receive has
		// taken every message, stopping leaves each handled or not for good.
		waitUntil(t, "every message received", func() bool { called, _ := f.polls(); return called > 0 && f.queued("q") == 0 })
		stop()
		wait(5 * time.Second)
		return f, h, reg
	}
	signed := types.Message{Body: aws.String(string(good)), MessageAttributes: awstest.SQSAttributes(signer.Sign(good))}
	forged := types.Message{Body: aws.String("ok forged"), MessageAttributes: map[string]types.MessageAttributeValue{
		"type": {DataType: aws.String("String"), StringValue: aws.String("payment.created")},
	}, Attributes: map[string]string{"SenderId": "AIDAFORGER", "MessageGroupId": "pay_1"}}

	t.Run("standard", func(t *testing.T) {
		f, h, reg := run(t, verifier, "dlq", signed, forged)
		if strings.Join(h.seen, ",") != string(good) {
			t.Errorf("handled %q, want the signed message alone", h.seen)
		}
		sent := f.sentTo("dlq")
		if len(sent) != 1 || aws.ToString(sent[0].MessageBody) != "ok forged" {
			t.Fatalf("sent to the DLQ: %v, want the forgery", sent)
		}
		attrs := sent[0].MessageAttributes
		if got := aws.ToString(attrs[sqs.AttrRejected].StringValue); !strings.HasPrefix(got, "missing_signature: ") {
			t.Errorf("%s %q, want missing_signature and its detail", sqs.AttrRejected, got)
		}
		if aws.ToString(attrs[sqs.AttrSenderID].StringValue) != "AIDAFORGER" || aws.ToString(attrs["type"].StringValue) != "payment.created" {
			t.Errorf("the DLQ copy's attributes %v: want the sender and the message's own", attrs)
		}
		if sent[0].MessageGroupId != nil {
			t.Error("a standard DLQ's copy has a message group")
		}
		if len(f.deleted["q"]) != 2 {
			t.Errorf("deleted from the queue %v, want both: the forgery once its copy is in the DLQ", f.deleted["q"])
		}
		if got := metricValue(t, reg, "ledger_messages_unverified_total", "reason", "missing_signature"); got != 1 {
			t.Errorf("unverified{missing_signature}: got %v, want 1", got)
		}
	})
	t.Run("FIFO", func(t *testing.T) {
		f, h, _ := run(t, verifier, "dlq.fifo", forged)
		if len(h.seen) != 0 {
			t.Errorf("handled %q, want nothing", h.seen)
		}
		sent := f.sentTo("dlq.fifo")
		if len(sent) != 1 || aws.ToString(sent[0].MessageGroupId) != "pay_1" || !strings.HasPrefix(aws.ToString(sent[0].MessageDeduplicationId), "rejected-") {
			t.Fatalf("sent to the FIFO DLQ: %+v, want the forgery in its group pay_1 with a deduplication id of its own", sent)
		}
	})
	t.Run("the copy fails", func(t *testing.T) {
		f := newFakeSQS()
		f.failSend["ok forged"] = true
		f.putMessage("q", forged)
		h := &fakeHandler{sqs: f}
		reg := prometheus.NewRegistry()
		c := sqs.NewConsumer(f, h, "q", logtest.Discard(), sqs.NewMetrics(reg, "ledger"), time.Now, sqs.Config{DLQURL: "dlq", Workers: 1, WaitTime: time.Second, Verifier: verifier})
		stop, wait := runConsumer(t, c)
		waitUntil(t, "the forgery made visible again", func() bool { return strings.Contains(strings.Join(calls(f), " "), "visibility0") })
		stop()
		wait(5 * time.Second)
		if len(h.seen) != 0 || len(f.deleted["q"]) != 0 {
			t.Errorf("handled %q, deleted %v; want neither: left for the redrive policy", h.seen, f.deleted["q"])
		}
	})
	t.Run("accepting unsigned", func(t *testing.T) {
		_, h, reg := run(t, accepting, "dlq", types.Message{Body: aws.String("ok unsigned")})
		if strings.Join(h.seen, ",") != "ok unsigned" {
			t.Errorf("handled %q, want the unsigned message", h.seen)
		}
		if got := metricValue(t, reg, "ledger_messages_unsigned_accepted_total"); got != 1 {
			t.Errorf("unsigned accepted: got %v, want 1", got)
		}
	})
}
