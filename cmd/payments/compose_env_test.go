package main

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// composeService is what docker-compose.yml gives this service, as
// testdata/compose.json records it. The compose file itself is loaded, with
// the compose-spec library, by the tools module's tests (tools/stack), which
// keep that file equal to it: the library stays out of the services' go.mod.
type composeService struct {
	Environment     map[string]string `json:"environment"`
	StopGracePeriod string            `json:"stop_grace_period"` // a Go duration; empty: Docker's 10s
}

func readComposeService(t *testing.T) composeService {
	t.Helper()
	b, err := os.ReadFile("testdata/compose.json")
	if err != nil {
		t.Fatal(err)
	}
	var s composeService
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("testdata/compose.json: %v", err)
	}
	if len(s.Environment) == 0 {
		t.Fatal("testdata/compose.json gives payments no environment")
	}
	return s
}

// sdkVariables are read by the AWS SDK's default credential chain, not by our
// loader (docs/CONFIGURATION.md: AWS credentials come from the SDK's default
// chain).
// The OTEL_* ones are OpenTelemetry's standard variables, which its SDK
// reads.
var sdkVariables = map[string]bool{"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true,
	"OTEL_EXPORTER_OTLP_ENDPOINT": true, "OTEL_SERVICE_NAME": true}

func TestComposeEnvironmentIsWhatPaymentsReads(t *testing.T) {
	env := readComposeService(t).Environment
	read := map[string]bool{}
	getenv := func(k string) string { read[k] = true; return env[k] }
	if _, err := loadConfig(getenv, true); err != nil {
		t.Fatalf("the compose environment does not start payments: %v", err)
	}
	for k := range env {
		if !read[k] && !sdkVariables[k] {
			t.Errorf("compose sets %s, which payments never reads", k)
		}
	}
}

// Docker kills a container stop_grace_period after SIGTERM (10 s unless
// set): that must outlast SHUTDOWN_TIMEOUT, or in-flight requests and the
// relay's batch are cut off.
func TestComposeGracePeriodOutlastsShutdown(t *testing.T) {
	s := readComposeService(t)
	cfg, err := loadConfig(func(k string) string { return s.Environment[k] }, true)
	if err != nil {
		t.Fatal(err)
	}
	grace, err := time.ParseDuration(s.StopGracePeriod)
	if s.StopGracePeriod == "" || err != nil || grace <= cfg.ShutdownTimeout {
		t.Errorf("payments stop_grace_period = %q, want more than SHUTDOWN_TIMEOUT %s", s.StopGracePeriod, cfg.ShutdownTimeout)
	}
}
