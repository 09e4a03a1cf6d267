package sqs_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
)

// queueDepth is the queue's visible plus in-flight messages.
func queueDepth(t *testing.T, r *rig) int {
	t.Helper()
	out, err := r.tq.SQS.GetQueueAttributes(context.Background(), &awssqs.GetQueueAttributesInput{
		QueueUrl: aws.String(r.tq.QueueURL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible} {
		v, err := strconv.Atoi(out.Attributes[string(k)])
		if err != nil {
			t.Fatal(err)
		}
		n += v
	}
	return n
}

// TestAsyncModeAcknowledgesAfterRecording is the async inbox's window "crash
// after the acknowledgement, before processing": the consumer records and
// acknowledges, posting nothing, so the queue empties while the ledger has
// not moved; an invalid event still goes to the DLQ, as in the sync mode.
// The consumer then stops (as a crash would stop it): the rows are durable
// and pending, and a processor started afterwards posts each message once.
func TestAsyncModeAcknowledgesAfterRecording(t *testing.T) {
	t.Parallel()
	r := newRig(t, awstest.QueueConfig{MaxReceiveCount: 2, VisibilityTimeout: time.Second})
	r.handler = r.svc.async
	r.start(t, r.tq.SQS, 2)
	var bodies [][]byte
	for i := range 20 {
		p := newPayment(int64(100+i), "cus_a", "mer_a")
		bodies = append(bodies, p.body())
		if i%4 == 0 {
			bodies = append(bodies, p.refund(50).body())
		}
	}
	poison := []byte(`{"specversion":"1.0","id":"` + uuid.NewString() + `","type":"payment.created","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","time":"2026-11-29T12:00:00.000Z","data":{"amount":"lots"}}`)
	publish(t, r.tq, append(bodies, poison)...)

	waitFor(t, time.Minute, "every good message recorded", func() bool {
		return r.metric(t, "ledger_messages_processed_total", "outcome", "recorded") >= float64(len(bodies))
	})
	waitFor(t, time.Minute, "the queue empty: recorded messages acknowledged, the poison one in the DLQ", func() bool {
		return queueDepth(t, r) == 0
	})
	r.stop(t)
	if n := r.ledgerTransactions(t); n != 0 {
		t.Fatalf("async mode posted %d transactions before any processor ran, want 0", n)
	}
	if got := r.metric(t, "ledger_processing_failures_total", "reason", "poison"); got < 1 {
		t.Errorf("poison failures: got %v, want at least 1", got)
	}
	var pending int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM inbox_messages WHERE processed_at IS NULL`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != len(bodies) {
		t.Fatalf("pending inbox rows: got %d, want %d (the poison message left none)", pending, len(bodies))
	}

	p := newBooks(t, ledgerstore.New(r.pool)).proc
	// A refund recorded before its payment waits for it, retried after its
	// backoff: step until every row is applied.
	waitFor(t, time.Minute, "every recorded message applied", func() bool {
		if _, err := p.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		return r.ledgerTransactions(t) == len(bodies)
	})
}
