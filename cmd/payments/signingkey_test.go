package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/provenance"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// testKey is the key the tests' payments services sign with, and
// signingEnv its variables (envOf's defaults).
var (
	testKey    = mustGenerate("test-key")
	signingEnv = map[string]string{"PAYMENTS_SIGNING_KEY_ID": testKey.KeyID(), "PAYMENTS_SIGNING_KEY": testKey.Seed()}
)

func mustGenerate(id string) *provenance.Signer {
	s, err := provenance.GenerateSigner(id)
	if err != nil {
		panic(err)
	}
	return s
}

// TestSigningKeyCreatePrintsAWorkingPair: what `payments signing-key
// create` prints is an env file whose three variables are what payments and
// the consumers read, and the consumers' key verifies payments' signatures.
func TestSigningKeyCreatePrintsAWorkingPair(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if err := run(context.Background(), []string{"signing-key", "create", "--id", "2026-07"}, envOf(nil), &out, nil); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for line := range strings.Lines(out.String()) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("line %q is neither a comment nor NAME=value", line)
		}
		vars[k] = v
	}
	if vars["PAYMENTS_SIGNING_KEY_ID"] != "2026-07" || len(vars) != 3 {
		t.Fatalf("printed %v, want PAYMENTS_SIGNING_KEY_ID=2026-07, PAYMENTS_SIGNING_KEY and PAYMENTS_PUBLIC_KEYS", vars)
	}
	vars["DATABASE_URL"], vars["PAYMENTS_TOPIC_ARN"] = "postgres://x", "arn:aws:sns:us-east-1:000000000000:t"
	cfg, err := loadConfig(func(k string) string { return vars[k] }, true)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := provenance.ParseKeySet(vars["PAYMENTS_PUBLIC_KEYS"])
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"e"}`)
	if _, err := provenance.NewVerifier(keys, provenance.VerifierConfig{}).Verify(body, cfg.Signer.Sign(body)); err != nil {
		t.Errorf("the printed public key does not verify the printed private key's signature: %v", err)
	}
	var again strings.Builder
	if err := run(context.Background(), []string{"signing-key", "create"}, envOf(nil), &again, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(again.String(), vars["PAYMENTS_SIGNING_KEY"]) {
		t.Error("two runs printed the same private key")
	}
}

// TestTheServicePublishesSignedEvents: the running service's relay signs
// what it publishes — each message on the queue carries the configured key
// id and a signature that the key's public half verifies on the body the
// queue holds — and its logs never carry the private key.
func TestTheServicePublishesSignedEvents(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{})
	env := map[string]string{
		"DATABASE_URL": dbURL, "HTTP_ADDR": "127.0.0.1:0", "OPS_ADDR": "127.0.0.1:0",
		"AWS_ENDPOINT_URL": awstest.Endpoint(t), "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_REGION": tq.Config.Region, "PAYMENTS_TOPIC_ARN": tq.TopicARN, "LOG_LEVEL": "debug",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listening := make(chan addrs, 1)
	done := make(chan error, 1)
	logs := &logtest.Buffer{}
	go func() { done <- run(ctx, nil, envOf(env), logs, listening) }()
	var addr addrs
	select {
	case addr = <-listening:
	case err := <-done:
		t.Fatalf("run exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not serving after 30s")
	}
	key := createKey(t, dbURL, "--merchant", "mer_1", "--name", "test")
	req, err := http.NewRequest(http.MethodPost, "http://"+addr.API+"/payments", strings.NewReader(`{"amount": 1050, "currency": "BRL", "payer_id": "cus_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create: status %d", res.StatusCode)
	}
	msgs := tq.Drain(t, tq.QueueURL, 1, time.Minute)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run after shutdown: %v", err)
	}
	if len(msgs) != 1 {
		t.Fatalf("got %d messages, want the payment's event", len(msgs))
	}
	keys, err := provenance.NewKeySet(testKey.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	m := msgs[0]
	sig := provenance.Signature{
		KeyID: aws.ToString(m.MessageAttributes[provenance.KeyIDAttribute].StringValue),
		Value: aws.ToString(m.MessageAttributes[provenance.SignatureAttribute].StringValue),
	}
	if _, err := provenance.NewVerifier(keys, provenance.VerifierConfig{}).Verify([]byte(aws.ToString(m.Body)), sig); err != nil {
		t.Errorf("the published event: %v", err)
	}
	if strings.Contains(logs.String(), testKey.Seed()) {
		t.Error("the private key reached the logs")
	}
	if !strings.Contains(logs.String(), `"signing_key_id":"test-key"`) {
		t.Errorf("the relay's start-up line does not name the key id:\n%s", logs)
	}
}
