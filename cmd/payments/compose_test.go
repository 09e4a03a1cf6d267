package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// No Docker engine runs in CI, so docker-compose.yml is proven here instead:
// loaded with the compose-spec library, its services, health checks and
// start order are checked, and the environment it gives this service is run
// through this service's own config loader.

func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"../../docker-compose.yml"},
		cli.WithWorkingDirectory("../.."), cli.WithEnv([]string{}), cli.WithName("payments-outbox"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	return p
}

func TestComposeServices(t *testing.T) {
	p := loadCompose(t)
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"postgres", "localstack", "payments", "ledger"} {
		s, ok := p.Services[name]
		if !ok {
			t.Errorf("service %s is missing", name)
			continue
		}
		if s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 || s.HealthCheck.Disable {
			t.Errorf("service %s has no healthcheck", name)
		}
		if s.Restart == "" {
			t.Errorf("service %s has no restart policy", name)
		}
		switch {
		case s.Build != nil:
			// The target must be a stage of the one Dockerfile.
			if !regexp.MustCompile(`(?mi)^FROM .+ AS ` + regexp.QuoteMeta(s.Build.Target) + `$`).Match(dockerfile) {
				t.Errorf("service %s builds target %q, which the Dockerfile does not define", name, s.Build.Target)
			}
		case s.Image == "":
			t.Errorf("service %s has neither image nor build", name)
		}
	}
	if img := p.Services["localstack"].Image; img != "localstack/localstack:4.14.0" {
		t.Errorf("localstack image = %q, want localstack/localstack:4.14.0 (newer tags need an auth token)", img)
	}
	for _, app := range []string{"payments", "ledger"} {
		deps := p.Services[app].DependsOn
		for _, need := range []string{"postgres", "localstack"} {
			if d, ok := deps[need]; !ok || d.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s must depend on %s with condition service_healthy, got %+v", app, need, d)
			}
		}
	}

	// The mounted files exist; LocalStack's hook is executable (LocalStack
	// runs ready.d scripts directly) and is the very script CI runs.
	mounts := map[string]string{}
	for _, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeBind {
				mounts[v.Target] = v.Source
			}
		}
	}
	hook, ok := mounts["/etc/localstack/init/ready.d/init-aws.sh"]
	if !ok {
		t.Fatal("no init script mounted into /etc/localstack/init/ready.d")
	}
	if rel, _ := filepath.Rel(mustAbs(t, "../.."), hook); rel != "localstack/init-aws.sh" {
		t.Errorf("LocalStack hook is %s, want localstack/init-aws.sh (the script .ci/run uses)", rel)
	}
	if fi, err := os.Stat(hook); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("init script %s must exist and be executable (stat: %v)", hook, err)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil || !strings.Contains(string(ci), "localstack/init-aws.sh") {
		t.Errorf(".ci/run must run localstack/init-aws.sh too")
	}
	if sql, ok := mounts["/docker-entrypoint-initdb.d/create-databases.sql"]; !ok {
		t.Error("postgres has no init script creating the databases")
	} else if b, err := os.ReadFile(sql); err != nil || !strings.Contains(string(b), "CREATE DATABASE payments") || !strings.Contains(string(b), "CREATE DATABASE ledger") {
		t.Errorf("%s must create the payments and ledger databases (%v)", sql, err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// sdkVariables are read by the AWS SDK's default credential chain, not by our
// loader (SPEC §4: credentials come from the SDK).
var sdkVariables = map[string]bool{"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true}

func TestComposeEnvironmentIsWhatPaymentsReads(t *testing.T) {
	env := map[string]string{}
	for k, v := range loadCompose(t).Services["payments"].Environment {
		if v != nil {
			env[k] = *v
		}
	}
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
