package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
)

// queue is an SQS queue and its dead-letter queue.
type queue struct{ url, dlqURL string }

// subscribeQueue creates the webhooks service's queue and DLQ on the
// fixture's topic, as localstack/init-aws.sh subscribes webhooks-queue
// beside the ledger's: raw delivery, the same receive budget and
// visibility, FIFO when the topic is. They are deleted when t ends.
func subscribeQueue(t *testing.T, fixture *awstest.TopicQueue) queue {
	t.Helper()
	ctx := context.Background()
	name, suffix := "wh-"+strconv.FormatInt(time.Now().UnixNano(), 36), ""
	var fifo map[string]string
	if strings.HasSuffix(fixture.TopicARN, ".fifo") {
		suffix = ".fifo"
		fifo = map[string]string{string(sqstypes.QueueAttributeNameFifoQueue): "true"}
	}
	create := func(name string, attrs map[string]string) (url, arn string) {
		q, err := fixture.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatalf("create queue %s: %v", name, err)
		}
		t.Cleanup(func() {
			_, _ = fixture.SQS.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
		})
		a, err := fixture.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
		})
		if err != nil {
			t.Fatalf("queue arn of %s: %v", name, err)
		}
		return aws.ToString(q.QueueUrl), a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	}
	var q queue
	var dlqARN, queueARN string
	q.dlqURL, dlqARN = create(name+"-dlq"+suffix, fifo)
	attrs := map[string]string{
		string(sqstypes.QueueAttributeNameRedrivePolicy):     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, dlqARN, awstest.MaxReceiveCount),
		string(sqstypes.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(awstest.VisibilityTimeout / time.Second)),
	}
	for k, v := range fifo {
		attrs[k] = v
	}
	q.url, queueARN = create(name+suffix, attrs)
	_, err := fixture.SNS.Subscribe(ctx, &sns.SubscribeInput{
		TopicArn: aws.String(fixture.TopicARN), Protocol: aws.String("sqs"), Endpoint: aws.String(queueARN),
		Attributes: map[string]string{"RawMessageDelivery": "true"},
	})
	if err != nil {
		t.Fatalf("subscribe the webhooks queue: %v", err)
	}
	return q
}

// receiver is tools/webhookreceiver running for a test.
type receiver struct {
	addr       string // host:port
	secretFile string // its WEBHOOKS_RECEIVER_SECRETS_FILE
	log        string // its stdout and stderr
}

// receiverURL is the receiver's POST /webhooks, as the webhooks service
// reaches it.
func (s *services) receiverURL() string { return "http://" + s.receiver.addr + "/webhooks" }

// startReceiver builds tools/webhookreceiver and runs it with the command
// and environment compose gives it — the listen address a free loopback
// port, the mounted secrets file one in dir, the time zone the container's
// (UTC) — and waits until it listens. At the end of the test it sends
// SIGTERM and requires a clean exit.
func startReceiver(t *testing.T, dir string, j job) *receiver {
	t.Helper()
	bin := filepath.Join(dir, "webhook-receiver")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "../webhookreceiver").CombinedOutput(); err != nil {
		t.Fatalf("go build ./webhookreceiver: %v\n%s", err, out)
	}
	r := &receiver{secretFile: filepath.Join(dir, "receiver-secret"), log: filepath.Join(dir, "webhook-receiver.log")}
	args := slices.Clone(j.args)
	if i := slices.Index(args, "-addr"); i < 0 || i+1 == len(args) {
		t.Fatalf("compose runs the receiver with %v, no -addr", j.args)
	} else {
		args[i+1] = "127.0.0.1:0"
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TZ=UTC"}
	for k, v := range j.env {
		if k == "WEBHOOKS_RECEIVER_SECRETS_FILE" {
			v = r.secretFile
		}
		env = append(env, k+"="+v)
	}
	f, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); f.Close() }()
	t.Cleanup(func() {
		select {
		case err := <-done:
			t.Errorf("the receiver exited before the end of the test: %v", err)
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("the receiver after SIGTERM: %v", err)
				}
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				t.Error("the receiver did not stop within 20s of SIGTERM")
			}
		}
		if t.Failed() {
			b, _ := os.ReadFile(r.log)
			t.Logf("webhook-receiver log:\n%s", b)
		}
	})
	// It logs the address it listens on first.
	for deadline := time.Now().Add(time.Minute); r.addr == ""; {
		r.addr = listening(r.log)
		if r.addr != "" {
			break
		}
		select {
		case err := <-done:
			b, _ := os.ReadFile(r.log)
			t.Fatalf("the receiver exited during start-up: %v\n%s", err, b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the receiver logged no address within a minute")
		}
	}
	return r
}

// listening returns the address of the receiver's "listening" log line,
// "" before it is written.
func listening(log string) string {
	f, err := os.Open(log)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "webhook receiver listening" {
			return l.Addr
		}
	}
	return ""
}

// verified returns the webhook-ids of the deliveries the receiver logged
// as verified.
func (r *receiver) verified(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(r.log)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(string(b), "\n") {
		var l struct {
			Msg      string `json:"msg"`
			ID       string `json:"webhook-id"`
			Verified bool   `json:"verified"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "webhook" && l.Verified {
			ids = append(ids, l.ID)
		}
	}
	return ids
}

// webhooksDo sends a request to the webhooks API with key and returns the
// status and the body.
func (s *services) webhooksDo(ctx context.Context, t *testing.T, key, method, path, body string) (int, []byte) {
	t.Helper()
	var r io.Reader // nil when empty: a body-less request, sent with no Transfer-Encoding
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+s.whAddr+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b
}

// register creates an endpoint of key's merchant at the receiver for every
// event type, and returns its id and its secret.
func (s *services) register(ctx context.Context, t *testing.T, key string) (id, secret string) {
	t.Helper()
	code, b := s.webhooksDo(ctx, t, key, "POST", "/webhook_endpoints", fmt.Sprintf(`{"url": %q, "enabled_events": ["*"]}`, s.receiverURL()))
	var ep struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	if code != http.StatusCreated || json.Unmarshal(b, &ep) != nil || ep.ID == "" || ep.Secret == "" {
		t.Fatalf("POST /webhook_endpoints: %d %s", code, b)
	}
	return ep.ID, ep.Secret
}

// failingDelivery registers an endpoint of mer_1 whose secret the receiver
// does not have, so that it answers 400, and creates a payment: its
// delivery is retried, and the webhooks service exposes the series only an
// undelivered delivery has (the per-endpoint age), as the dashboard check
// needs them. It returns once the per-endpoint series is exposed.
func (s *services) failingDelivery(ctx context.Context, t *testing.T) {
	t.Helper()
	code, b := s.webhooksDo(ctx, t, demoAPIKey, "POST", "/webhook_endpoints", fmt.Sprintf(`{"url": %q, "enabled_events": ["payment.created"]}`, s.receiverURL()+"?unsigned"))
	if code != http.StatusCreated {
		t.Fatalf("POST /webhook_endpoints: %d %s", code, b)
	}
	s.pay(ctx, t, demoAPIKey, `{"amount": 100, "currency": "BRL", "payer_id": "cus_1"}`)
	for {
		res, err := http.Get("http://" + s.whOps + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if strings.Contains(string(b), "\nwebhooks_endpoint_oldest_undelivered_age_seconds{") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("no delivery is undelivered: the per-endpoint age has no series")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// webhookAttempt is what the tests read of an attempt.
type webhookAttempt struct {
	EventID   string `json:"event_id"`
	EventType string `json:"event_type"`
	Outcome   string `json:"outcome"`
}

// attempts lists the endpoint's attempts with key.
func (s *services) attempts(ctx context.Context, t *testing.T, key, endpoint string) []webhookAttempt {
	t.Helper()
	code, b := s.webhooksDo(ctx, t, key, "GET", "/webhook_endpoints/"+endpoint+"/deliveries?limit=100", "")
	var list struct {
		Data []webhookAttempt `json:"data"`
	}
	if code != http.StatusOK || json.Unmarshal(b, &list) != nil {
		t.Fatalf("deliveries of %s: %d %s", endpoint, code, b)
	}
	return list.Data
}

// waitDelivered polls until the endpoint has a delivered attempt and
// returns the endpoint's attempts then.
func (s *services) waitDelivered(ctx context.Context, t *testing.T, key, endpoint string) []webhookAttempt {
	t.Helper()
	for {
		list := s.attempts(ctx, t, key, endpoint)
		if slices.ContainsFunc(list, func(a webhookAttempt) bool { return a.Outcome == "delivered" }) {
			return list
		}
		select {
		case <-ctx.Done():
			t.Fatalf("nothing delivered to endpoint %s: %+v", endpoint, list)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestCrossMerchantWebhooks sends the cross-merchant attempts at the
// webhooks service through the real services: merchant mer_B's key cannot
// read merchant mer_1's endpoint, its attempts, nor redeliver its events —
// each answered 404, as an endpoint that does not exist — and lists none of
// it; and mer_1's endpoint is never sent mer_B's payment events, which
// reach mer_B's own endpoint.
func TestCrossMerchantWebhooks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the services")
	}
	svc := startServices(t, nil, awstest.QueueConfig{})
	merB := createKey(t, svc, "mer_B")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	endpointA, secretA := svc.register(ctx, t, demoAPIKey)
	endpointB, secretB := svc.register(ctx, t, merB)
	if err := os.WriteFile(svc.receiver.secretFile, []byte(secretA+"\n"+secretB+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// mer_B's payment first, then mer_1's; each reaches its own endpoint.
	svc.pay(ctx, t, merB, `{"amount": 700, "currency": "BRL", "payer_id": "cus_b"}`)
	gotB := svc.waitDelivered(ctx, t, merB, endpointB)
	svc.pay(ctx, t, demoAPIKey, `{"amount": 800, "currency": "BRL", "payer_id": "cus_1"}`)
	gotA := svc.waitDelivered(ctx, t, demoAPIKey, endpointA)

	// mer_B's event was fanned out (to its endpoint) before mer_1's was
	// delivered: had it gone to mer_1's endpoint, it would be listed there.
	eventB := gotB[0].EventID
	for _, a := range gotA {
		if a.EventID == eventB {
			t.Errorf("mer_1's endpoint was sent mer_B's event %s: %+v", eventB, a)
		}
	}
	if len(gotA) != 1 || len(gotB) != 1 || gotA[0].EventType != "payment.created" || gotB[0].EventType != "payment.created" {
		t.Errorf("attempts: mer_1's %+v, mer_B's %+v; want one payment.created each", gotA, gotB)
	}
	eventA := gotA[0].EventID
	if got := svc.receiver.verified(t); !slices.Contains(got, eventA) || !slices.Contains(got, eventB) {
		t.Errorf("the receiver verified %v, want both %s and %s", got, eventA, eventB)
	}

	// mer_B's key, on mer_1's endpoint: 404 everywhere, as for none.
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/webhook_endpoints/" + endpointA, ""},
		{"GET", "/webhook_endpoints/" + endpointA + "/deliveries", ""},
		{"POST", "/webhook_endpoints/" + endpointA + "/deliveries/" + eventA + "/redeliver", ""},
		{"POST", "/webhook_endpoints/" + endpointA + "/rotate_secret", "{}"},
		{"DELETE", "/webhook_endpoints/" + endpointA, ""},
	} {
		if code, b := svc.webhooksDo(ctx, t, merB, r.method, r.path, r.body); code != http.StatusNotFound {
			t.Errorf("mer_B: %s %s: %d %s, want 404", r.method, r.path, code, b)
		}
	}
	code, b := svc.webhooksDo(ctx, t, merB, "GET", "/webhook_endpoints", "")
	if code != http.StatusOK || strings.Contains(string(b), endpointA) || !strings.Contains(string(b), endpointB) {
		t.Errorf("mer_B's list: %d %s, want its own endpoint only", code, b)
	}
	// mer_1's endpoint is untouched: still enabled, still one attempt.
	if code, b := svc.webhooksDo(ctx, t, demoAPIKey, "GET", "/webhook_endpoints/"+endpointA, ""); code != http.StatusOK || !strings.Contains(string(b), `"status":"enabled"`) {
		t.Errorf("mer_1's endpoint after mer_B's attempts: %d %s", code, b)
	}
	if got := svc.attempts(ctx, t, demoAPIKey, endpointA); len(got) != 1 {
		t.Errorf("mer_1's attempts after mer_B's redeliver: %+v, want the one delivery", got)
	}
}
