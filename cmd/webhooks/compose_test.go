package main

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// The environment docker-compose.yml gives the webhooks service must be
// exactly what it reads: every variable it sets is read by the config
// loader (or by the AWS SDK's credential chain), and every required one is
// set. The tools module's tests (tools/stack) keep testdata/compose.json
// equal to what the compose file gives the service, as for the ledger
// (cmd/ledger/compose_test.go).
func TestComposeEnvironmentIsWhatWebhooksReads(t *testing.T) {
	b, err := os.ReadFile("testdata/compose.json")
	if err != nil {
		t.Fatal(err)
	}
	var service struct {
		Environment     map[string]string `json:"environment"`
		StopGracePeriod string            `json:"stop_grace_period"` // a Go duration; empty: Docker's 10s
	}
	if err := json.Unmarshal(b, &service); err != nil {
		t.Fatalf("testdata/compose.json: %v", err)
	}
	env := service.Environment
	if len(env) == 0 {
		t.Fatal("testdata/compose.json gives the webhooks service no environment")
	}
	read := map[string]bool{}
	getenv := func(k string) string { read[k] = true; return env[k] }
	cfg, err := loadConfig(getenv, true)
	if err != nil {
		t.Fatalf("the compose environment does not start the webhooks service: %v", err)
	}
	// docker compose stop waits stop_grace_period (10s unless set) after the
	// SIGTERM, then kills: it must leave the service its whole shutdown.
	grace := 10 * time.Second
	if g := service.StopGracePeriod; g != "" {
		if grace, err = time.ParseDuration(g); err != nil {
			t.Fatalf("testdata/compose.json: stop_grace_period: %v", err)
		}
	}
	if grace <= cfg.ShutdownTimeout {
		t.Errorf("the webhooks service's stop_grace_period is %s, want more than its SHUTDOWN_TIMEOUT (%s)", grace, cfg.ShutdownTimeout)
	}
	otherReaders := map[string]bool{
		"AWS_ACCESS_KEY_ID":     true, // the SDK's default credential chain
		"AWS_SECRET_ACCESS_KEY": true,
		// OpenTelemetry's standard variables, read by its SDK.
		"OTEL_EXPORTER_OTLP_ENDPOINT": true,
		"OTEL_SERVICE_NAME":           true,
	}
	for k := range env {
		if !read[k] && !otherReaders[k] {
			t.Errorf("compose sets %s, which the webhooks service never reads", k)
		}
	}
}
