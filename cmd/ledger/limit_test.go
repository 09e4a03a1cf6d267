package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// TestForgedPaymentsOverTheLimitAreNotPosted sends, straight to the queue
// and signed with the payments service's key (what a bug in the producer
// would publish, and neither the queue's policy nor the signature would
// stop), a payment.created and a payment.authorized of 10^15 BRL, above the ledger's
// default LEDGER_MAX_AMOUNT, then a payment within it. In each inbox mode
// the service as it runs refuses both forged events before recording them:
// the DLQ gets them, with their reason in the log and the refusals and
// poison counted, and nothing of them is posted or held; the valid payment
// behind them posts.
func TestForgedPaymentsOverTheLimitAreNotPosted(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testForgedOverTheLimit(t, mode)
		})
	}
}

func testForgedOverTheLimit(t *testing.T, mode string) {
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{MaxReceiveCount: 2, VisibilityTimeout: time.Second})
	dbURL := pgtest.NewDatabase(t)
	env := map[string]string{
		"DATABASE_URL":             dbURL,
		"HTTP_ADDR":                "127.0.0.1:0",
		"OPS_ADDR":                 "127.0.0.1:0",
		"LEDGER_API_TOKENS":        operatorToken,
		"AWS_ENDPOINT_URL":         awstest.Endpoint(t),
		"AWS_REGION":               tq.Config.Region,
		"LEDGER_QUEUE_URL":         tq.QueueURL,
		"LEDGER_DLQ_URL":           tq.DLQURL,
		"LEDGER_WORKERS":           "2",
		"LEDGER_WAIT_TIME":         "1s",
		"LEDGER_DLQ_POLL_INTERVAL": "200ms",
		"LEDGER_INBOX_MODE":        mode,
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
	client := &http.Client{Transport: bearer(operatorToken, apitest.New(t, apidoc.Ledger()).Transport(t, nil))}
	ops := apitest.New(t, apidoc.Ops()).Client(t)

	merchant := "mer_" + uuid.NewString()[:8]
	event := func(typ string, amount int64, extra string) (id, paymentID, body string) {
		id, paymentID = uuid.NewString(), uuid.NewString()
		body = fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":%q,"dataschema":"https://payments-outbox.example/schemas/events/%[2]s/v1.json","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","data":{"payment_id":%q,"amount":%d,"currency":"BRL","payer_id":"cus_1","merchant_id":%q%s}}`,
			id, typ, paymentID, time.Now().UTC().Format(time.RFC3339Nano), paymentID, amount, merchant, extra)
		return id, paymentID, body
	}
	const forged = 1_000_000_000_000_000 // 10^15
	createdID, createdPayment, created := event("payment.created", forged, "")
	authorizedID, authorizedPayment, authorized := event("payment.authorized", forged, `,"capture_before":"2099-01-01T00:00:00Z"`)
	_, _, valid := event("payment.created", 1050, "")
	for _, body := range []string{created, authorized, valid} {
		if _, err := tq.SQS.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(tq.QueueURL), MessageBody: aws.String(body),
			MessageAttributes: awstest.SQSAttributes(testKey.Sign([]byte(body)))}); err != nil {
			t.Fatal(err)
		}
	}

	// The refusals are counted at each delivery; the DLQ's depth is read
	// every LEDGER_DLQ_POLL_INTERVAL.
	metrics := func() string {
		res, err := ops.Get("http://" + addr.Ops + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	// Each series at least: a forged message is delivered maxReceiveCount
	// times, and counted at each.
	wants := map[string]float64{
		`ledger_dlq_messages`: 2,
		`ledger_events_refused_total{kind="payment",reason="amount_limit"}`:       1,
		`ledger_events_refused_total{kind="authorization",reason="amount_limit"}`: 1,
		`ledger_processing_failures_total{reason="poison"}`:                       2,
	}
	var m string
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		m = metrics()
		all := true
		for series, want := range wants {
			all = all && seriesValue(m, series) >= want
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the forged events did not reach the DLQ counted as refused: want at least %v in the metrics\n%s\nlogs:\n%s", wants, m, logs)
		}
	}
	for _, id := range []string{createdID, authorizedID} {
		if !strings.Contains(logs.String(), id) || !strings.Contains(logs.String(), "amount exceeds the ledger's limit") {
			t.Errorf("the log does not say event %s was refused for the amount limit:\n%s", id, logs)
		}
	}

	// The valid payment posted; nothing of the forged ones did, nor was
	// recorded in the inbox.
	var balances struct {
		Balances []struct {
			Currency  string `json:"currency"`
			Available int64  `json:"available"`
			Pending   int64  `json:"pending"`
		} `json:"balances"`
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		res, err := client.Get("http://" + addr.API + "/merchants/" + merchant + "/balance")
		if err != nil {
			t.Fatal(err)
		}
		ok := res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(&balances) == nil && len(balances.Balances) > 0
		res.Body.Close()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the valid payment's balance never appeared; logs:\n%s", logs)
		}
	}
	if len(balances.Balances) != 1 || balances.Balances[0].Available != 1050 || balances.Balances[0].Pending != 0 {
		t.Errorf("merchant %s: got %+v, want 1050 BRL available and nothing pending", merchant, balances.Balances)
	}
	for _, p := range []string{createdPayment, authorizedPayment} {
		res, err := client.Get("http://" + addr.API + "/payments/" + p + "/entries")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("entries of the forged payment %s: status %d, want 404", p, res.StatusCode)
		}
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var recorded, held int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM inbox_messages WHERE id = ANY($1::uuid[])`, []string{createdID, authorizedID}).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM ledger_payments WHERE payment_id = ANY($1::uuid[])`, []string{createdPayment, authorizedPayment}).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if recorded != 0 || held != 0 {
		t.Errorf("forged events: %d inbox rows, %d ledger payments; want none: refused before anything is written", recorded, held)
	}
}

// seriesValue returns the value of series (its name and labels as the
// exposition format writes them) in the metrics text m, or -1.
func seriesValue(m, series string) float64 {
	for _, line := range strings.Split(m, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f
			}
		}
	}
	return -1
}
