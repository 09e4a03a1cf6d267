package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/provenance/provenancetest"
	"github.com/payments-outbox/payments-outbox/tools/internal/proc"
)

// TestRestartsNeverDeadLetterAGoodMessage deploys the real ledger binary the way an
// operator does — SIGTERM, start again — three times, while payments keep
// being created. Its workers are idle in long polls when the signal comes;
// events are published while it stops and while it is down.
//
// A stop that abandoned its long polls would leave the broker handing them
// those events: each then hidden for the visibility timeout and charged a
// receive nobody used. The queue here dead-letters a message at its third
// receive, and hides one for 30 s, twice the time every event is given to be
// posted after a start: either would fail the test.
func TestRestartsNeverDeadLetterAGoodMessage(t *testing.T) {
	t.Parallel()
	const (
		visibility = 30 * time.Second
		postWithin = 15 * time.Second // of a start: half the visibility timeout
		perBurst   = 20
	)
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{MaxReceiveCount: 2, VisibilityTimeout: visibility})
	dbURL := pgtest.NewDatabase(t)
	ctx := context.Background()
	dir := t.TempDir()
	bin, err := proc.Build(ctx, dir, "ledger")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"DATABASE_URL="+dbURL,
		"AWS_ENDPOINT_URL="+awstest.Endpoint(t),
		"AWS_REGION="+tq.Config.Region,
		"LEDGER_QUEUE_URL="+tq.QueueURL,
		"LEDGER_DLQ_URL="+tq.DLQURL,
		"LEDGER_WORKERS=4",
		"LEDGER_WAIT_TIME=5s",
		"SHUTDOWN_TIMEOUT=10s",
		"LEDGER_DLQ_POLL_INTERVAL=1s",
		"LOG_LEVEL=info",
		"PAYMENTS_PUBLIC_KEYS="+restartKey.PublicKey().String(),
	)
	for k, def := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"} {
		if os.Getenv(k) == "" {
			env = append(env, k+"="+def)
		}
	}
	led, err := proc.New("ledger", bin, filepath.Join(dir, "ledger.log"), env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = led.Stop() })

	var published []string // payment ids
	publish := func(what string) {
		t.Helper()
		ids := publishPayments(t, tq, perBurst)
		published = append(published, ids...)
		t.Logf("%d events published %s", len(ids), what)
	}
	var db *pgx.Conn
	posted := func() map[string]int {
		t.Helper()
		rows, err := db.Query(ctx, `SELECT payment_id::text, count(*) FROM ledger_transactions GROUP BY payment_id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		m := map[string]int{}
		for rows.Next() {
			var id string
			var n int
			if err := rows.Scan(&id, &n); err != nil {
				t.Fatal(err)
			}
			m[id] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return m
	}

	publish("before the first start")
	for round := 1; ; round++ {
		if err := led.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if db == nil {
			if db, err = pgx.Connect(ctx, dbURL); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close(context.Background()) })
		}
		deadline := time.Now().Add(postWithin)
		for {
			got := posted()
			missing := 0
			for _, id := range published {
				if got[id] == 0 {
					missing++
				}
			}
			if missing == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("start %d: %d of %d events not posted within %s; a shutdown left them hidden for the visibility timeout (%s), or in the DLQ (%d messages)\n%s",
					round, missing, len(published), postWithin, visibility, depth(t, tq.SQS, tq.DLQURL), led.Tail(30))
			}
			time.Sleep(100 * time.Millisecond) // polling the database with a deadline
		}
		if round == 4 {
			break
		}

		// Everything is posted: each worker waits in a long poll. SIGTERM,
		// and publish as soon as the signal has arrived (the HTTP listener
		// closes at once), while those polls are still open.
		stopped := make(chan error, 1)
		go func() { stopped <- led.Stop() }()
		waitUnreachable(t, led.OpsAddr())
		publish(fmt.Sprintf("while stop %d drains", round))
		if err := <-stopped; err != nil {
			t.Fatalf("stop %d: %v\n%s", round, err, led.Tail(30))
		}
		publish(fmt.Sprintf("while down after stop %d", round))
	}
	if err := led.Stop(); err != nil {
		t.Fatalf("last stop: %v", err)
	}

	got := posted()
	for _, id := range published {
		if got[id] != 1 {
			t.Errorf("payment %s: posted %d times, want exactly once", id, got[id])
		}
	}
	if len(got) != len(published) {
		t.Errorf("ledger: %d payments posted, want %d", len(got), len(published))
	}
	if n := depth(t, tq.SQS, tq.DLQURL); n != 0 {
		t.Errorf("DLQ: %d messages, want none: restarts dead-lettered good events", n)
	}
	if n := depth(t, tq.SQS, tq.QueueURL); n != 0 {
		t.Errorf("queue: %d messages left, want none", n)
	}
}

// restartKey signs the events publishPayments publishes in the payments
// service's place; the ledger holds its public half.
var restartKey = provenancetest.NewSigner("restart-test")

// publishPayments publishes n payment.created events through the topic, 10
// per request as the payments relay does, signed as it signs them, and
// returns their payment ids.
func publishPayments(t *testing.T, tq *awstest.TopicQueue, n int) []string {
	t.Helper()
	var ids []string
	for len(ids) < n {
		var entries []snstypes.PublishBatchRequestEntry
		for i := 0; i < 10 && len(ids) < n; i++ {
			id := uuid.NewString()
			ids = append(ids, id)
			body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":%q,"amount":%d,"currency":"BRL","payer_id":"cus_r","merchant_id":"mer_r"}}`,
				uuid.NewString(), id, time.Now().UTC().Format(time.RFC3339Nano), id, 100+len(ids))
			entries = append(entries, snstypes.PublishBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), Message: aws.String(body),
				MessageAttributes: awstest.SNSAttributes(restartKey.Sign([]byte(body)))})
		}
		out, err := tq.SNS.PublishBatch(context.Background(), &sns.PublishBatchInput{TopicArn: aws.String(tq.TopicARN), PublishBatchRequestEntries: entries})
		if err != nil {
			t.Fatalf("publish: %v", err)
		}
		if len(out.Failed) > 0 {
			t.Fatalf("publish: %d entries failed", len(out.Failed))
		}
	}
	return ids
}

// waitUnreachable polls addr until it stops answering: the process has the signal.
func waitUnreachable(t *testing.T, addr string) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		res, err := client.Get("http://" + addr + "/readyz")
		if err != nil {
			return
		}
		res.Body.Close()
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
	t.Fatalf("%s still answers 10s after SIGTERM", addr)
}

// depth is a queue's message count, visible and in flight.
func depth(t *testing.T, client *awssqs.Client, queueURL string) int {
	t.Helper()
	out, err := client.GetQueueAttributes(context.Background(), &awssqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		t.Fatalf("queue attributes: %v", err)
	}
	n := 0
	for _, name := range []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	} {
		v, err := strconv.Atoi(out.Attributes[string(name)])
		if err != nil {
			t.Fatalf("%s = %q: %v", name, out.Attributes[string(name)], err)
		}
		n += v
	}
	return n
}
