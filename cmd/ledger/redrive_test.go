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

func TestDLQRedriveCommand(t *testing.T) {
	t.Parallel()
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{})
	ctx := context.Background()
	for _, body := range []string{"first", "second"} {
		if _, err := tq.SQS.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(tq.DLQURL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{
		"DATABASE_URL":     "postgres://unused", // redrive never touches the database
		"AWS_ENDPOINT_URL": awstest.Endpoint(t),
		"AWS_REGION":       tq.Config.Region,
		"LEDGER_QUEUE_URL": tq.QueueURL,
		"LEDGER_DLQ_URL":   tq.DLQURL,
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"dlq", "redrive"}, getenvFrom(env), &out, nil); err != nil {
		t.Fatalf("dlq redrive: %v\n%s", err, &out)
	}
	if !strings.Contains(out.String(), "2 messages moved back") {
		t.Errorf("output: got %q, want it to report 2 messages moved", out.String())
	}
	got := tq.Drain(t, tq.QueueURL, 2, 30*time.Second)
	if len(got) != 2 {
		t.Errorf("queue after redrive: got %d messages, want 2", len(got))
	}
	if left := tq.Drain(t, tq.DLQURL, 1, 2*time.Second); len(left) != 0 {
		t.Errorf("dlq after redrive: got %d messages, want 0", len(left))
	}
}
