package main

import (
	"context"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
)

// The environment docker-compose.yml gives the ledger must be exactly what
// the ledger reads: every variable it sets is read by the config loader (or by
// `ledger reconcile`, or by the AWS SDK's credential chain), and every
// required one is set. The compose file's structure is checked in
// cmd/payments (TestComposeServices).
func TestComposeEnvironmentIsWhatLedgerReads(t *testing.T) {
	opts, err := cli.NewProjectOptions([]string{"../../docker-compose.yml"},
		cli.WithWorkingDirectory("../.."), cli.WithEnv([]string{}), cli.WithName("payments-outbox"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	env := map[string]string{}
	for k, v := range p.Services["ledger"].Environment {
		if v != nil {
			env[k] = *v
		}
	}
	read := map[string]bool{}
	getenv := func(k string) string { read[k] = true; return env[k] }
	cfg, err := loadConfig(getenv, true)
	if err != nil {
		t.Fatalf("the compose environment does not start the ledger: %v", err)
	}
	// docker compose stop waits stop_grace_period (10s unless set) after the
	// SIGTERM, then kills: it must leave the ledger its whole shutdown.
	grace := 10 * time.Second
	if g := p.Services["ledger"].StopGracePeriod; g != nil {
		grace = time.Duration(*g)
	}
	if grace <= cfg.ShutdownTimeout {
		t.Errorf("the ledger's stop_grace_period is %s, want more than its SHUTDOWN_TIMEOUT (%s)", grace, cfg.ShutdownTimeout)
	}
	otherReaders := map[string]bool{
		"PAYMENTS_DATABASE_URL": true, // ledger reconcile
		"AWS_ACCESS_KEY_ID":     true, // the SDK's default credential chain
		"AWS_SECRET_ACCESS_KEY": true,
		// OpenTelemetry's standard variables, read by its SDK.
		"OTEL_EXPORTER_OTLP_ENDPOINT": true,
		"OTEL_SERVICE_NAME":           true,
	}
	for k := range env {
		if !read[k] && !otherReaders[k] {
			t.Errorf("compose sets %s, which the ledger never reads", k)
		}
	}
}
