package main

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/apikeystore"
	"github.com/payments-outbox/payments-outbox/application/access"
)

// The webhooks service's tuning in the suite: an attempt gives up after
// webhookAttemptTimeout, and the retry schedule (ten retries, about a
// minute however the jitter falls) outlasts the receiver's misbehaviour,
// which stops with the faults: a delivery parked after the drain is then a
// lost one, not a schedule the faults outran.
const (
	webhookAttemptTimeout = 2 * time.Second
	webhookRetrySchedule  = "1s,1s,2s,2s,5s,5s,10s,10s,10s,10s"
)

// webhookMerchants are the merchants the traffic pays (onePayment's
// mer_0…mer_6), each with an endpoint of its own, and one merchant without
// payments whose endpoint must receive nothing.
func webhookMerchants() []string {
	var ms []string
	for i := range 7 {
		ms = append(ms, fmt.Sprintf("mer_%d", i))
	}
	return append(ms, "mer_quiet")
}

// webhookQueue is the webhooks service's queue and DLQ, subscribed to the
// run's topic beside the ledger's, as localstack/init-aws.sh subscribes
// webhooks-queue: raw delivery, the same receive budget and visibility.
type webhookQueue struct{ QueueURL, DLQURL string }

func newWebhookQueue(t testing.TB, tq *awstest.TopicQueue, fifo bool) webhookQueue {
	t.Helper()
	ctx := context.Background()
	name, suffix := "wh-"+strconv.FormatInt(time.Now().UnixNano(), 36), ""
	var base map[string]string
	if fifo {
		suffix = ".fifo"
		base = map[string]string{string(sqstypes.QueueAttributeNameFifoQueue): "true"}
	}
	create := func(name string, attrs map[string]string) (url, arn string) {
		all := map[string]string{}
		for k, v := range base {
			all[k] = v
		}
		for k, v := range attrs {
			all[k] = v
		}
		q, err := tq.SQS.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(name), Attributes: all})
		if err != nil {
			t.Fatalf("webhooks queue %s: %v", name, err)
		}
		t.Cleanup(func() {
			_, _ = tq.SQS.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
		})
		a, err := tq.SQS.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
			QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
		})
		if err != nil {
			t.Fatalf("webhooks queue %s: %v", name, err)
		}
		return aws.ToString(q.QueueUrl), a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	}
	var wq webhookQueue
	var dlqARN, queueARN string
	wq.DLQURL, dlqARN = create(name+"-dlq"+suffix, nil)
	wq.QueueURL, queueARN = create(name+suffix, map[string]string{
		string(sqstypes.QueueAttributeNameRedrivePolicy):     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, dlqARN, awstest.MaxReceiveCount),
		string(sqstypes.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(visibilityTimeout / time.Second)),
	})
	if _, err := tq.SNS.Subscribe(ctx, &sns.SubscribeInput{
		TopicArn: aws.String(tq.TopicARN), Protocol: aws.String("sqs"), Endpoint: aws.String(queueARN),
		Attributes: map[string]string{"RawMessageDelivery": "true"},
	}); err != nil {
		t.Fatalf("subscribe the webhooks queue: %v", err)
	}
	return wq
}

// webhookEnv is a webhooks replica's environment beyond the suite's common one.
func webhookEnv(dbURL, awsURL, paymentsAddr string, wq webhookQueue, secretsKey string) map[string]string {
	return map[string]string{
		"DATABASE_URL":                   dbURL,
		"AWS_ENDPOINT_URL":               awsURL,
		"WEBHOOKS_QUEUE_URL":             wq.QueueURL,
		"WEBHOOKS_DLQ_URL":               wq.DLQURL,
		"WEBHOOKS_PAYMENTS_URL":          "http://" + paymentsAddr,
		"WEBHOOKS_SECRETS_KEY":           secretsKey,
		"WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true",
		"WEBHOOKS_RETRY_SCHEDULE":        webhookRetrySchedule,
		"WEBHOOKS_ATTEMPT_TIMEOUT":       webhookAttemptTimeout.String(),
		"WEBHOOKS_WAIT_TIME":             "2s",
		"SHUTDOWN_TIMEOUT":               "7s", // the wait + sqs.BatchBudget
		"WEBHOOKS_INBOX_POLL_INTERVAL":   "200ms",
	}
}

func newSecretsKey() string {
	b := make([]byte, 32)
	_, _ = crand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// received is one request that reached the receiver with its whole body.
type received struct {
	merchant  string // whose endpoint it reached (the path)
	webhookID string
	body      []byte
	verified  bool // the endpoint's secret signs it (Standard Webhooks)
	answered  bool // answered 2xx: delivered, as far as the receiver knows
}

// receiver is every merchant's webhook endpoint: /m/<merchant>. While
// chaotic it fails at random — 500s, answers later than the attempt
// timeout, connections reset without an answer, slow answers — and
// records every request it read.
type receiver struct {
	srv     *httptest.Server
	chaotic atomic.Bool
	flying  atomic.Int64 // requests being answered now

	mu      sync.Mutex
	secrets map[string]*standardwebhooks.Webhook // merchant → its endpoint's verifier
	got     []received
	faults  map[string]int
}

func newReceiver() *receiver {
	rc := &receiver{secrets: map[string]*standardwebhooks.Webhook{}, faults: map[string]int{}}
	rc.chaotic.Store(true)
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	return rc
}

func (rc *receiver) url(merchant string) string { return rc.srv.URL + "/m/" + merchant }

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	rc.flying.Add(1)
	defer rc.flying.Add(-1)
	merchant, ok := strings.CutPrefix(r.URL.Path, "/m/")
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if !ok || err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	wh := rc.secrets[merchant]
	rc.mu.Unlock()
	rec := received{merchant: merchant, webhookID: r.Header.Get("webhook-id"), body: body}
	rec.verified = wh != nil && wh.Verify(body, r.Header) == nil

	fault := "none"
	if rc.chaotic.Load() {
		switch x := rand.Float64(); {
		case x < 0.15:
			fault = "500"
		case x < 0.25:
			fault = "timeout"
		case x < 0.35:
			fault = "reset"
		case x < 0.45:
			fault = "slow"
		}
	}
	switch fault {
	case "500":
		w.WriteHeader(http.StatusInternalServerError)
	case "timeout":
		// Answer past the attempt timeout, or not at all once the sender
		// has given up.
		select {
		case <-time.After(webhookAttemptTimeout + time.Second): // the fault is the wait
			w.WriteHeader(http.StatusNoContent)
		case <-r.Context().Done():
		}
	case "reset":
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // an RST, not a FIN
				}
				_ = conn.Close()
			}
		}
	case "slow":
		time.Sleep(time.Duration(200+rand.IntN(600)) * time.Millisecond) // the fault is the wait, well inside the attempt timeout
		fallthrough
	default:
		rec.answered = rec.verified
		if rec.verified {
			w.WriteHeader(http.StatusNoContent)
		} else {
			w.WriteHeader(http.StatusBadRequest)
		}
	}
	rc.mu.Lock()
	rc.got = append(rc.got, rec)
	rc.faults[fault]++
	rc.mu.Unlock()
}

// register creates each merchant's endpoint through the webhooks merchant
// API at addr, with that merchant's own API key, subscribed to every event.
func (rc *receiver) register(ctx context.Context, t testing.TB, addr, payDB string, merchants []string) {
	t.Helper()
	pool, err := postgres.Open(ctx, payDB, postgres.Config{})
	if err != nil {
		t.Fatalf("merchant keys: %v", err)
	}
	defer pool.Close()
	keys := access.NewKeys(apikeystore.New(pool), time.Now)
	hc := &http.Client{Timeout: clientTimeout}
	for _, m := range merchants {
		key, _, err := keys.Issue(ctx, access.Issue{Env: access.EnvTest, MerchantID: m, Name: "faultsuite " + m})
		if err != nil {
			t.Fatalf("merchant key %s: %v", m, err)
		}
		body, _ := json.Marshal(map[string]any{"url": rc.url(m), "enabled_events": []string{"*"}, "description": "faultsuite"})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/webhook_endpoints", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("register %s: %v", m, err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "faultsuite-"+m)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatalf("register %s: %v", m, err)
		}
		resBody, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		var created struct {
			Secret string `json:"secret"`
		}
		if res.StatusCode != http.StatusCreated || json.Unmarshal(resBody, &created) != nil {
			t.Fatalf("register %s: %s %s", m, res.Status, resBody)
		}
		wh, err := standardwebhooks.NewWebhook(created.Secret)
		if err != nil {
			t.Fatalf("register %s: the secret answered: %v", m, err)
		}
		rc.mu.Lock()
		rc.secrets[m] = wh
		rc.mu.Unlock()
	}
}

// webhookState is what is left for the webhooks service to do.
type webhookState struct {
	inbox, unprocessed                    int // inbox rows, and those not applied
	delivered, pending, parked, cancelled int
	queued, inflight, dlq                 int
	err                                   error
}

func (s webhookState) String() string {
	return fmt.Sprintf("{inbox:%d unprocessed:%d delivered:%d pending:%d parked:%d canceled:%d queued:%d inflight:%d dlq:%d err:%v}",
		s.inbox, s.unprocessed, s.delivered, s.pending, s.parked, s.cancelled, s.queued, s.inflight, s.dlq, s.err)
}

// drained: every event the payments service committed (events, all
// published) was recorded, fanned out and delivered, once per event: each
// event has exactly one subscribed endpoint, its merchant's.
func (s webhookState) drained(events int) bool {
	return s.err == nil && s.inbox == events && s.unprocessed == 0 && s.delivered == events &&
		s.pending == 0 && s.queued == 0 && s.inflight == 0
}

func readWebhookState(ctx context.Context, wh *pgx.Conn, client *awssqs.Client, wq webhookQueue) (s webhookState) {
	if s.err = wh.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE processed_at IS NULL) FROM inbox_messages`).Scan(&s.inbox, &s.unprocessed); s.err != nil {
		return s
	}
	if s.err = wh.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'delivered'), count(*) FILTER (WHERE status = 'pending'),
		count(*) FILTER (WHERE status = 'parked'), count(*) FILTER (WHERE status = 'canceled') FROM webhook_deliveries`).Scan(&s.delivered, &s.pending, &s.parked, &s.cancelled); s.err != nil {
		return s
	}
	if s.queued, s.inflight, s.err = queueCounts(ctx, client, wq.QueueURL); s.err != nil {
		return s
	}
	v, i, err := queueCounts(ctx, client, wq.DLQURL)
	s.dlq, s.err = v+i, err
	return s
}

// checkWebhooks asserts the webhooks guarantees once the system drained:
// every payment event reached its merchant's endpoint at least once, signed
// with that endpoint's secret; every copy of one event carried the same
// webhook-id (the event's id) and the same body (the event as published);
// nothing reached another merchant's endpoint; nothing was left pending,
// parked or canceled, nothing in the DLQ.
func checkWebhooks(ctx context.Context, t testing.TB, rep *report, rc *receiver, pay *pgx.Conn, s webhookState, logf func(string, ...any)) {
	type event struct{ merchant, payload string }
	events := map[string]event{}
	rows, err := pay.Query(ctx, `SELECT id::text, payload->'data'->>'merchant_id', payload::text FROM outbox`)
	if err != nil {
		t.Fatalf("read outbox: %v", err)
	}
	for rows.Next() {
		var id string
		var e event
		if err := rows.Scan(&id, &e.merchant, &e.payload); err != nil {
			t.Fatalf("read outbox: %v", err)
		}
		events[id] = e
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read outbox: %v", err)
	}

	rc.mu.Lock()
	got := append([]received(nil), rc.got...)
	faults := fmt.Sprint(rc.faults)
	rc.mu.Unlock()

	bad := 0
	failf := func(format string, args ...any) {
		if bad++; bad <= 10 {
			rep.fail(format, args...)
		}
	}
	first := map[string][]byte{} // webhook-id → the first body seen
	delivered := map[string]bool{}
	copies := 0
	for _, r := range got {
		var body struct {
			ID   string `json:"id"`
			Data struct {
				MerchantID string `json:"merchant_id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil {
			failf("webhook %s to %s: body is not JSON: %v", r.webhookID, r.merchant, err)
			continue
		}
		e, known := events[r.webhookID]
		switch {
		case !r.verified:
			failf("webhook %s to %s: the signature does not verify with the endpoint's secret", r.webhookID, r.merchant)
		case body.ID != r.webhookID:
			failf("webhook %s to %s: webhook-id is not the event's id %s", r.webhookID, r.merchant, body.ID)
		case !known:
			failf("webhook %s to %s: no such event in the outbox", r.webhookID, r.merchant)
		case r.merchant != e.merchant || body.Data.MerchantID != e.merchant:
			failf("webhook %s of merchant %s reached %s's endpoint", r.webhookID, e.merchant, r.merchant)
		case !bytes.Equal(r.body, []byte(e.payload)):
			failf("webhook %s: the body is not the event's bytes as published:\n  got  %s\n  want %s", r.webhookID, r.body, e.payload)
		}
		if prev, ok := first[r.webhookID]; !ok {
			first[r.webhookID] = r.body
		} else if copies++; !bytes.Equal(prev, r.body) {
			failf("webhook %s: two copies with different bodies:\n  %s\n  %s", r.webhookID, prev, r.body)
		}
		if r.answered {
			delivered[r.webhookID] = true
		}
	}
	missing := 0
	for id, e := range events {
		if !delivered[id] {
			if missing++; missing <= 5 {
				failf("event %s of %s: never answered 2xx at its merchant's endpoint (%d requests carried it)", id, e.merchant, countOf(got, id))
			}
		}
	}
	if missing > 5 {
		rep.fail("… %d events never delivered in all", missing)
	}
	if s.pending != 0 || s.parked != 0 || s.cancelled != 0 || s.dlq != 0 || s.unprocessed != 0 {
		rep.fail("webhooks: left after the drain: %s", s)
	}
	if bad > 10 {
		rep.fail("… %d webhook deliveries wrong in all", bad)
	}
	logf("webhooks: %d events, %d requests reached the receiver (%d repeats of an event), faults answered %s",
		len(events), len(got), copies, faults)
}

func countOf(got []received, id string) int {
	n := 0
	for _, r := range got {
		if r.webhookID == id {
			n++
		}
	}
	return n
}
