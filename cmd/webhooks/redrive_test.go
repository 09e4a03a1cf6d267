package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
)

// TestDLQRedriveCommand: `webhooks dlq redrive` moves what the DLQ holds
// back to the queue, and says how many.
func TestDLQRedriveCommand(t *testing.T) {
	t.Parallel()
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{})
	ctx := context.Background()
	for _, body := range []string{"first", "second"} {
		if _, err := tq.SQS.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(tq.DLQURL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	env := baseEnv() // the database is never touched
	env["AWS_ENDPOINT_URL"] = awstest.Endpoint(t)
	env["AWS_REGION"] = tq.Config.Region
	env["WEBHOOKS_QUEUE_URL"] = tq.QueueURL
	env["WEBHOOKS_DLQ_URL"] = tq.DLQURL
	var out bytes.Buffer
	if err := run(ctx, []string{"dlq", "redrive"}, getenvFrom(env), &out, nil); err != nil {
		t.Fatalf("dlq redrive: %v\n%s", err, &out)
	}
	if !strings.Contains(out.String(), "2 messages moved back") {
		t.Errorf("output: got %q, want it to report 2 messages moved", out.String())
	}
	if got := tq.Drain(t, tq.QueueURL, 2, 30*time.Second); len(got) != 2 {
		t.Errorf("queue after redrive: got %d messages, want 2", len(got))
	}
	if left := tq.Drain(t, tq.DLQURL, 1, 2*time.Second); len(left) != 0 {
		t.Errorf("dlq after redrive: got %d messages, want 0", len(left))
	}
}
