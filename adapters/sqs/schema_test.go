package sqs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/ledgers/ledgerstest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// schemas returns the published events' schemas, which the ledger checks
// every event it posts against, as cmd/ledger wires them.
func schemas(t testing.TB) *eventschema.Validator {
	t.Helper()
	v, err := eventschema.New()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSchemaViolationGoesToTheDLQ: an event the ledger's decoder would post
// but its published schema refuses — a field the schema does not have — is
// poison like any event the ledger cannot post: counted, never acknowledged,
// in the DLQ after maxReceiveCount receives, and no inbox row; the events
// around it are posted.
func TestSchemaViolationGoesToTheDLQ(t *testing.T) {
	t.Parallel()
	bad := []byte(strings.Replace(string(newPayment(500, "cus_v", "mer_v").body()),
		`"merchant_id":`, `"note":"not in the schema","merchant_id":`, 1))
	// The decoder alone accepts it: without the schemas it would post.
	lenient := ledgerstest.NewFakeStore()
	proc := inbox.NewProcessor(lenient, ledgers.Handler{}, &inboxtest.FakeSchemas{}, logtest.Discard(), nil, time.Now, inbox.ProcessorConfig{})
	if res, err := inbox.NewService(lenient, proc, time.Now, inbox.Config{}).Receive(context.Background(), bad); err != nil || res.Disposition != inbox.Applied {
		t.Fatalf("without the schemas: got %v, %v; want it applied, or this test proves nothing about them", res.Disposition, err)
	}

	r := newRig(t, awstest.QueueConfig{MaxReceiveCount: 2, VisibilityTimeout: time.Second})
	r.start(t, r.tq.SQS, 2)
	publish(t, r.tq, newPayment(100, "cus_v", "mer_v").body(), bad, newPayment(200, "cus_v", "mer_v").body())

	dead := r.tq.Drain(t, r.tq.DLQURL, 1, time.Minute)
	if len(dead) != 1 || aws.ToString(dead[0].Body) != string(bad) {
		t.Fatalf("DLQ: got %d messages, want the event the schema refuses", len(dead))
	}
	waitFor(t, time.Minute, "the two valid events applied", func() bool {
		return r.metric(t, "ledger_messages_processed_total", "outcome", "applied") >= 2
	})
	if got := r.metric(t, "ledger_processing_failures_total", "reason", "poison"); got < 2 {
		t.Errorf("poison failures: got %v, want at least maxReceiveCount (2)", got)
	}
	if n := r.ledgerTransactions(t); n != 2 {
		t.Errorf("ledger transactions: got %d, want 2", n)
	}
	var inbox int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM inbox_messages WHERE payload->'data' ? 'note'`).Scan(&inbox); err != nil {
		t.Fatal(err)
	}
	if inbox != 0 {
		t.Errorf("the refused event has %d inbox rows, want none", inbox)
	}
}
