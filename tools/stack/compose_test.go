package stack

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
)

// Without a Docker engine, docker-compose.yml is proven here (CI's compose
// stage then runs it for real, compose_stage_test.go): loaded with the
// compose-spec library, its services, health checks and
// start order are checked, and the environment it gives this service is run
// through this service's own config loader.

func loadCompose(t *testing.T, env ...string) *types.Project {
	t.Helper()
	return loadComposeProfiles(t, nil, env...)
}

// loadComposeProfiles loads the compose file as `docker compose --profile …`
// would, with profiles enabled.
func loadComposeProfiles(t *testing.T, profiles []string, env ...string) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"../../docker-compose.yml"},
		cli.WithWorkingDirectory("../.."), cli.WithEnv(env), cli.WithName("payments-outbox"), cli.WithProfiles(profiles))
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
	for _, name := range []string{"postgres", "localstack", "payments", "ledger", "webhooks", "webhook-receiver"} {
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
	if img := p.Services["localstack"].Image; !strings.HasPrefix(img, "localstack/localstack:4.14.0@") {
		t.Errorf("localstack image = %q, want localstack/localstack:4.14.0 (newer tags need an auth token)", img)
	}
	// The webhooks service asks payments about every merchant's API key, so
	// it starts once payments is healthy too.
	for app, needs := range map[string][]string{
		"payments": {"postgres", "localstack"},
		"ledger":   {"postgres", "localstack"},
		"webhooks": {"postgres", "localstack", "payments"},
	} {
		deps := p.Services[app].DependsOn
		for _, need := range needs {
			if d, ok := deps[need]; !ok || d.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s must depend on %s with condition service_healthy, got %+v", app, need, d)
			}
		}
	}
	if got := composeEnv(p, "webhooks")["WEBHOOKS_PAYMENTS_URL"]; got != "http://payments:8080" {
		t.Errorf("webhooks: WEBHOOKS_PAYMENTS_URL = %q, want http://payments:8080, payments' HTTP_ADDR on the compose network", got)
	}
	// Each service's DATABASE_URL is its own database, one of those the
	// Postgres init creates.
	for app, db := range map[string]string{"payments": "payments", "ledger": "ledger", "webhooks": "webhooks"} {
		if got := composeEnv(p, app)["DATABASE_URL"]; !strings.Contains(got, "@postgres:5432/"+db+"?") {
			t.Errorf("%s: DATABASE_URL = %q, want the %s database", app, got, db)
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
	if !regexp.MustCompile(`(?m)^for db in payments ledger webhooks; do$`).Match(ci) {
		t.Errorf(".ci/run must create the payments, ledger and webhooks databases, as compose's Postgres does")
	}
	if sql, ok := mounts["/docker-entrypoint-initdb.d/create-databases.sql"]; !ok {
		t.Error("postgres has no init script creating the databases")
	} else if b, err := os.ReadFile(sql); err != nil || !strings.Contains(string(b), "CREATE DATABASE payments") || !strings.Contains(string(b), "CREATE DATABASE ledger") || !strings.Contains(string(b), "CREATE DATABASE webhooks") {
		t.Errorf("%s must create the payments, ledger and webhooks databases (%v)", sql, err)
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

// update rewrites the services' testdata from docker-compose.yml:
//
//	go -C tools test ./stack -run TestComposeTestdataIsTheComposeFile -update
var update = flag.Bool("update", false, "rewrite cmd/*/testdata/compose.json from docker-compose.yml")

// composeService is what docker-compose.yml gives a service and its config
// loader must accept: cmd/payments and cmd/ledger run their loaders on it
// (TestComposeEnvironmentIsWhatPaymentsReads, …WhatLedgerReads), from their
// testdata/compose.json, since the compose library belongs to this module
// and not to the services'.
type composeService struct {
	// Environment holds the variables compose sets, with their defaults
	// (none of the ${…} variables set); a variable passed through from the
	// host without a value is left out, as the container would lack it.
	Environment map[string]string `json:"environment"`
	// StopGracePeriod is stop_grace_period as a Go duration, empty when
	// unset (Docker's 10s).
	StopGracePeriod string `json:"stop_grace_period,omitempty"`
}

// The testdata the services' tests read is what docker-compose.yml says:
// change one without the other and this fails, naming the command that
// rewrites it.
func TestComposeTestdataIsTheComposeFile(t *testing.T) {
	p := loadCompose(t)
	for _, name := range []string{"payments", "ledger", "webhooks"} {
		s := p.Services[name]
		c := composeService{Environment: map[string]string{}}
		for k, v := range s.Environment {
			if v != nil {
				c.Environment[k] = *v
			}
		}
		if s.StopGracePeriod != nil {
			c.StopGracePeriod = time.Duration(*s.StopGracePeriod).String()
		}
		b, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, '\n')
		file := filepath.Join("../../cmd", name, "testdata", "compose.json")
		if *update {
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err == nil && bytes.Equal(got, b) {
			continue
		}
		if err == nil {
			err = errors.New("it differs")
		}
		t.Errorf("%s is not what docker-compose.yml gives %s: %v; rewrite it with\n\tgo -C tools test ./stack -run %s -update\nwant:\n%s",
			file, name, err, t.Name(), b)
	}
}

// pinned is an image reference that names its tag and pins its digest: the
// digest decides what runs, the tag tells the reader (and Dependabot) what
// it is.
var pinned = regexp.MustCompile(`^[a-z0-9./-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)

func TestComposeImagesArePinned(t *testing.T) {
	p := loadComposeProfiles(t, []string{observability})
	for name, s := range p.Services {
		if s.Build == nil && !pinned.MatchString(s.Image) {
			t.Errorf("service %s: image %q is not name:tag@sha256:digest", name, s.Image)
		}
	}
	// Tests start the images compose runs, so both see the same servers.
	for service, image := range map[string]string{"postgres": pgtest.Image, "localstack": awstest.Image} {
		if got := p.Services[service].Image; got != image {
			t.Errorf("compose runs %s as %s, the tests start %s: keep them equal", service, got, image)
		}
	}
	dockerfile := readDockerfile(t)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(dockerfile, -1)
	if len(froms) == 0 {
		t.Fatal("the Dockerfile has no FROM line")
	}
	for _, m := range froms {
		if !pinned.MatchString(m[1]) {
			t.Errorf("Dockerfile: FROM %s is not name:tag@sha256:digest", m[1])
		}
	}
	syntax := regexp.MustCompile(`(?m)^# syntax=(\S+)`).FindStringSubmatch(dockerfile)
	if syntax == nil || !pinned.MatchString(syntax[1]) {
		t.Errorf("Dockerfile: the syntax directive %q is not name:tag@sha256:digest", syntax)
	}
}

// readDockerfile returns the Dockerfile with its line continuations joined,
// so that each instruction is one line.
func readDockerfile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(b), "")
}

// Every go command of the build stage that downloads modules or compiles
// mounts the BuildKit caches, so a rebuild after a code change recompiles
// only what changed and downloads nothing.
func TestDockerfileMountsTheGoCaches(t *testing.T) {
	runs := regexp.MustCompile(`(?m)^RUN .*\bgo (build|mod download)\b.*$`).FindAllString(readDockerfile(t), -1)
	if len(runs) < 2 {
		t.Fatalf("found %d RUN lines with go mod download or go build, want both", len(runs))
	}
	for _, run := range runs {
		if !strings.Contains(run, "--mount=type=cache,target=/go/pkg/mod") {
			t.Errorf("no module cache mount: %s", run)
		}
		if strings.Contains(run, "go build") && !strings.Contains(run, "--mount=type=cache,target=/root/.cache/go-build") {
			t.Errorf("no build cache mount: %s", run)
		}
	}
}

// hostPort is one published port: the variable that moves it, and its
// default (the port the service listens on inside the network).
type hostPort struct{ variable, port string }

// hostPorts are the ports each service publishes, API first.
var hostPorts = map[string][]hostPort{
	"postgres":   {{"POSTGRES_HOST_PORT", "5432"}},
	"localstack": {{"LOCALSTACK_HOST_PORT", "4566"}},
	"payments":   {{"PAYMENTS_HOST_PORT", "8080"}, {"PAYMENTS_OPS_HOST_PORT", "9090"}},
	"ledger":     {{"LEDGER_HOST_PORT", "8081"}, {"LEDGER_OPS_HOST_PORT", "9091"}},
	"webhooks":   {{"WEBHOOKS_HOST_PORT", "8082"}, {"WEBHOOKS_OPS_HOST_PORT", "9092"}},
	// DEMO ONLY: the merchant endpoint the webhooks service delivers to.
	"webhook-receiver": {{"RECEIVER_HOST_PORT", "8083"}},
	// The observability profile's: Prometheus on 9095, not its own 9090,
	// which payments' ops listener holds.
	"prometheus": {{"PROMETHEUS_HOST_PORT", "9090"}},
	"grafana":    {{"GRAFANA_HOST_PORT", "3000"}},
	"jaeger":     {{"JAEGER_HOST_PORT", "16686"}},
}

// defaultHostPorts are the host ports that differ from the container's.
var defaultHostPorts = map[string]string{"PROMETHEUS_HOST_PORT": "9095"}

// Every port is published on loopback only (the demo's Postgres password is
// "postgres", the ops listeners ask for no credentials), on today's port by
// default and on another when its variable says so: a developer whose own
// Postgres holds 5432 can still start the stack.
func TestComposePortsAreLoopbackAndMovable(t *testing.T) {
	var env []string
	moved := map[string]string{}
	for _, hps := range hostPorts {
		for _, hp := range hps {
			moved[hp.variable] = strconv.Itoa(20000 + len(moved)) // each elsewhere, none twice
			env = append(env, hp.variable+"="+moved[hp.variable])
		}
	}
	byDefault := func(hp hostPort) string {
		if p, ok := defaultHostPorts[hp.variable]; ok {
			return p
		}
		return hp.port
	}
	for _, tc := range []struct {
		env  []string
		want func(hostPort) string
	}{
		{nil, byDefault},
		{env, func(hp hostPort) string { return moved[hp.variable] }},
	} {
		p := loadComposeProfiles(t, []string{observability}, tc.env...)
		published := map[string]string{}
		for name, s := range p.Services {
			hps := hostPorts[name]
			if len(s.Ports) != len(hps) {
				t.Errorf("service %s publishes %d ports, want %d; give each a *_HOST_PORT variable here and in the README", name, len(s.Ports), len(hps))
				continue
			}
			for i, port := range s.Ports {
				hp := hps[i]
				if port.HostIP != "127.0.0.1" {
					t.Errorf("service %s publishes on %q, want 127.0.0.1 only", name, port.HostIP)
				}
				if want := tc.want(hp); port.Published != want || strconv.Itoa(int(port.Target)) != hp.port {
					t.Errorf("service %s (env %v) publishes %s:%d, want %s:%s", name, tc.env, port.Published, port.Target, want, hp.port)
				}
				if other, taken := published[port.Published]; taken {
					t.Errorf("services %s and %s both publish host port %s", other, name, port.Published)
				}
				published[port.Published] = name
			}
		}
	}
}

// The services' healthchecks ask the ops listener (OPS_ADDR), which compose
// publishes apart from the API's port. Both listeners say 0.0.0.0: the
// services' defaults are loopback, which in a container nothing else
// reaches (not the published port, not Prometheus).
func TestComposeHealthchecksUseTheOpsListener(t *testing.T) {
	p := loadCompose(t)
	for name, ports := range map[string][2]string{"payments": {"8080", "9090"}, "ledger": {"8081", "9091"}, "webhooks": {"8082", "9092"}} {
		s := p.Services[name]
		if got := s.Environment["HTTP_ADDR"]; got == nil || *got != "0.0.0.0:"+ports[0] {
			t.Errorf("%s: HTTP_ADDR = %v, want 0.0.0.0:%s", name, got, ports[0])
		}
		port := ports[1]
		if got := s.Environment["OPS_ADDR"]; got == nil || *got != "0.0.0.0:"+port {
			t.Errorf("%s: OPS_ADDR = %v, want 0.0.0.0:%s", name, got, port)
		}
		if hc := s.HealthCheck; hc == nil || !slices.Equal(hc.Test, []string{"CMD", "/usr/local/bin/" + name, "healthcheck"}) {
			t.Errorf("%s: healthcheck %v, want the binary's healthcheck (which asks OPS_ADDR)", name, hc)
		}
	}
}

// A one-shot job (a service without a healthcheck that exits) must be a
// service_completed_successfully dependency of another service: otherwise
// `docker compose up --wait` counts its exit 0 as a failure. And the demo's
// key is stored before payments serves, once the schema exists.
func TestComposeOneShotJobsAreAwaited(t *testing.T) {
	p := loadCompose(t)
	awaited := map[string]bool{}
	for _, s := range p.Services {
		for dep, d := range s.DependsOn {
			if d.Condition == types.ServiceConditionCompletedSuccessfully {
				awaited[dep] = true
			}
		}
	}
	jobs := 0
	for name, s := range p.Services {
		if s.HealthCheck != nil || s.Restart != "no" {
			continue
		}
		jobs++
		if !awaited[name] {
			t.Errorf("the one-shot %s is no service's service_completed_successfully dependency: up --wait would fail on its exit", name)
		}
	}
	if jobs != 2 {
		t.Errorf("%d one-shot jobs, want 2 (payments-migrate, demo-key)", jobs)
	}
	demo := p.Services["demo-key"]
	if !slices.Equal(demo.Command[:2], []string{"apikey", "create"}) || !slices.Contains(demo.Command, "--key") {
		t.Errorf("demo-key runs %v, want payments apikey create --key …", demo.Command)
	}
	if d := demo.DependsOn["payments-migrate"]; d.Condition != types.ServiceConditionCompletedSuccessfully {
		t.Errorf("demo-key must wait for payments-migrate to complete, got %+v", d)
	}
	if got := p.Services["payments-migrate"].Command; !slices.Equal(got, []string{"migrate"}) {
		t.Errorf("payments-migrate runs %v, want [migrate]", got)
	}
}

// .gitattributes keeps every script LF in a Windows checkout: a CRLF
// init-aws.sh fails in LocalStack with "/usr/bin/env: 'bash\r'".
func TestScriptsStayLF(t *testing.T) {
	files, err := exec.Command("git", "-C", "../..", "ls-files").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	var scripts []string
	for _, f := range strings.Fields(string(files)) {
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err == nil && (bytes.HasPrefix(b, []byte("#!")) || f == "Makefile" || strings.HasSuffix(f, ".sh")) {
			scripts = append(scripts, f)
		}
	}
	if !slices.Contains(scripts, "localstack/init-aws.sh") || !slices.Contains(scripts, ".ci/run") {
		t.Fatalf("scripts found: %v; want at least localstack/init-aws.sh and .ci/run", scripts)
	}
	out, err := exec.Command("git", append([]string{"-C", "../..", "check-attr", "eol", "--"}, scripts...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasSuffix(line, ": eol: lf") {
			t.Errorf(".gitattributes: %s, want eol lf", line)
		}
	}
}

// .github/dependabot.yml must hold LocalStack on 4.14.0, the last tag that
// starts without an auth token, move the AWS SDK's modules together, and
// update both Go modules, the services' and the tools'.
func TestDependabotHoldsLocalStackAndGroupsTheSDK(t *testing.T) {
	b, err := os.ReadFile("../../.github/dependabot.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Updates []struct {
			Ecosystem   string   `yaml:"package-ecosystem"`
			Directory   string   `yaml:"directory"`
			Directories []string `yaml:"directories"`
			Ignore      []struct {
				Dependency  string   `yaml:"dependency-name"`
				UpdateTypes []string `yaml:"update-types"`
			} `yaml:"ignore"`
			Groups map[string]struct {
				Patterns []string `yaml:"patterns"`
			} `yaml:"groups"`
		} `yaml:"updates"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("dependabot.yml: %v", err)
	}
	var heldLocalStack, groupedSDK bool
	ecosystems := map[string]bool{}
	gomod := map[string]bool{}
	for _, u := range cfg.Updates {
		ecosystems[u.Ecosystem] = true
		if u.Ecosystem == "gomod" {
			for _, d := range append(u.Directories, u.Directory) {
				gomod[d] = true
			}
		}
		for _, ig := range u.Ignore {
			if u.Ecosystem == "docker-compose" && ig.Dependency == "localstack/localstack" && len(ig.UpdateTypes) == 0 {
				heldLocalStack = true
			}
		}
		for _, g := range u.Groups {
			if u.Ecosystem == "gomod" && slices.Contains(g.Patterns, "github.com/aws/*") {
				groupedSDK = true
			}
		}
	}
	if !heldLocalStack {
		t.Error("dependabot.yml does not ignore every update of localstack/localstack in docker-compose")
	}
	if !groupedSDK {
		t.Error("dependabot.yml has no gomod group for github.com/aws/*")
	}
	for _, e := range []string{"gomod", "github-actions", "docker", "docker-compose"} {
		if !ecosystems[e] {
			t.Errorf("dependabot.yml does not update %s", e)
		}
	}
	for _, dir := range []string{"/", "/tools"} {
		if !gomod[dir] {
			t.Errorf("dependabot.yml does not update the Go module in %s", dir)
		}
	}
}

// .github/workflows/ci.yml is what a fork's CI runs on GitHub's hosted
// runners (actionlint, in make lint, checks its syntax): the linters, the
// suite, and the compose stack from up to down with the walkthrough's
// balances checked in between.
func TestWorkflowRunsLintTestsAndTheStack(t *testing.T) {
	b, err := os.ReadFile("../../.github/workflows/ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Run string `yaml:"run"`
				If  string `yaml:"if"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("ci.yml: %v", err)
	}
	runs := func(job string) string {
		var all []string
		for _, s := range wf.Jobs[job].Steps {
			all = append(all, s.Run)
		}
		return strings.Join(all, "\n")
	}
	if !strings.Contains(runs("lint"), "make lint") {
		t.Error("the lint job does not run make lint")
	}
	if !strings.Contains(runs("test"), "make test") {
		t.Error("the test job does not run make test")
	}
	compose := runs("compose")
	if !regexp.MustCompile(`docker compose up .*--wait`).MatchString(compose) {
		t.Error("the compose job does not wait for the stack to be healthy (docker compose up --wait)")
	}
	// The figures are the walkthrough's: TestReadmeWalkthrough
	// (tools/walkthrough) compares them with what it leaves.
	order := []string{"docker compose up", "make demo", `test "$merchant" = `, `test "$payer" = `, "docker compose down --volumes"}
	at := 0
	for _, want := range order {
		i := strings.Index(compose[at:], want)
		if i < 0 {
			t.Fatalf("the compose job lacks %q after %q:\n%s", want, compose[:at], compose)
		}
		at += i + len(want)
	}
	last := wf.Jobs["compose"].Steps[len(wf.Jobs["compose"].Steps)-1]
	if !strings.Contains(last.Run, "docker compose down") || last.If != "always()" {
		t.Errorf("the compose job's last step should take the stack down always, got %+v", last)
	}
}

// The webhooks service's demo settings: a secrets key of the form it
// requires (base64 of 32 bytes, AES-256), private targets allowed so that
// it can deliver to the receiver over the compose network, and a receiver
// built from tools/webhookreceiver whose secrets file is a mounted
// directory of the repository (so the README's walkthrough can write the
// secret a registration answers, and the receiver reads it on the next
// delivery).
func TestComposeWebhooksDemo(t *testing.T) {
	p := loadCompose(t)
	env := composeEnv(p, "webhooks")
	if key, err := base64.StdEncoding.DecodeString(env["WEBHOOKS_SECRETS_KEY"]); err != nil || len(key) != 32 {
		t.Errorf("webhooks: WEBHOOKS_SECRETS_KEY decodes to %d bytes (%v), want base64 of 32", len(key), err)
	}
	if env["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] != "true" {
		t.Error("webhooks: WEBHOOKS_ALLOW_PRIVATE_TARGETS must be true, or it refuses to deliver to http://webhook-receiver")
	}
	for _, d := range strings.Split(env["WEBHOOKS_RETRY_SCHEDULE"], ",") {
		if dur, err := time.ParseDuration(d); err != nil || dur > time.Minute {
			t.Errorf("webhooks: WEBHOOKS_RETRY_SCHEDULE %q: %q, want short Go durations for the demo", env["WEBHOOKS_RETRY_SCHEDULE"], d)
		}
	}
	r := p.Services["webhook-receiver"]
	if r.Build == nil || r.Build.Target != "webhook-receiver" {
		t.Fatalf("webhook-receiver builds %+v, want the Dockerfile's webhook-receiver target", r.Build)
	}
	if !regexp.MustCompile(`go -C tools build .* \./webhookreceiver`).MatchString(readDockerfile(t)) {
		t.Error("the Dockerfile does not build tools/webhookreceiver")
	}
	// 0.0.0.0: the receiver's default is loopback, which the webhooks
	// container could not reach.
	if !slices.Equal(r.Command, []string{"-addr", "0.0.0.0:8083"}) {
		t.Errorf("webhook-receiver runs %v, want -addr 0.0.0.0:8083", r.Command)
	}
	file := composeEnv(p, "webhook-receiver")["WEBHOOKS_RECEIVER_SECRETS_FILE"]
	var mounted bool
	for _, v := range r.Volumes {
		if v.Type == types.VolumeTypeBind && strings.HasPrefix(file, v.Target+"/") {
			rel, _ := filepath.Rel(mustAbs(t, "../.."), v.Source)
			if _, err := os.Stat(filepath.Join(v.Source, ".gitignore")); err != nil {
				t.Errorf("webhook-receiver mounts %s, which the repository must hold (its .gitignore keeps the secret out of git): %v", rel, err)
			}
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("webhook-receiver reads its secrets from %q, which no bind mount provides", file)
	}
	if hc := r.HealthCheck; hc == nil || !slices.Equal(hc.Test, []string{"CMD", "/usr/local/bin/webhook-receiver", "-healthcheck", "-addr", "0.0.0.0:8083"}) {
		t.Errorf("webhook-receiver: healthcheck %v, want the binary's -healthcheck on its -addr", hc)
	}
}
