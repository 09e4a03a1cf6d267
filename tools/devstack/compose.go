package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// hostPort is a port docker-compose.yml publishes on 127.0.0.1, and the
// variable that moves it. make dev listens on the same ports, moved by the
// same variables (a test holds this table to the compose file).
type hostPort struct {
	service  string
	target   uint32 // the container's port
	variable string
}

var hostPorts = []hostPort{
	{"postgres", 5432, "POSTGRES_HOST_PORT"},
	{"localstack", 4566, "LOCALSTACK_HOST_PORT"},
	{"payments", 8080, "PAYMENTS_HOST_PORT"},
	{"payments", 9090, "PAYMENTS_OPS_HOST_PORT"},
	{"ledger", 8081, "LEDGER_HOST_PORT"},
	{"ledger", 9091, "LEDGER_OPS_HOST_PORT"},
	{"webhooks", 8082, "WEBHOOKS_HOST_PORT"},
	{"webhooks", 9092, "WEBHOOKS_OPS_HOST_PORT"},
	{"webhook-receiver", 8083, "RECEIVER_HOST_PORT"},
}

// unit is a service or a one-shot job of docker-compose.yml, as make dev
// runs it: the binary of its build target, its command, its environment.
type unit struct {
	name   string
	target string // the Dockerfile target: payments, ledger, webhooks, webhook-receiver
	args   []string
	env    map[string]string
}

// stack is what docker-compose.yml says, interpolated with the user's
// environment (so LEDGER_INBOX_MODE and the *_HOST_PORT variables work as
// they do for compose).
type stack struct {
	project *types.Project
	// ports maps "service:target" to the host port compose publishes it on.
	ports map[string]int
}

// The one-shot jobs, in the order compose runs them (each depends on the
// one before), then the long-running services, in their dependency order.
var (
	jobNames     = []string{"payments-migrate", "demo-key"}
	serviceNames = []string{"payments", "ledger", "webhooks", "webhook-receiver"}
)

func loadStack(ctx context.Context, repo string, environ []string) (*stack, error) {
	opts, err := cli.NewProjectOptions([]string{filepath.Join(repo, "docker-compose.yml")},
		cli.WithWorkingDirectory(repo), cli.WithEnv(environ), cli.WithName("payments-outbox"))
	if err != nil {
		return nil, err
	}
	p, err := opts.LoadProject(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker-compose.yml: %w", err)
	}
	s := &stack{project: p, ports: map[string]int{}}
	for _, hp := range hostPorts {
		svc, ok := p.Services[hp.service]
		if !ok {
			return nil, fmt.Errorf("docker-compose.yml has no service %s", hp.service)
		}
		found := false
		for _, pc := range svc.Ports {
			if pc.Target != hp.target {
				continue
			}
			n, err := strconv.Atoi(pc.Published)
			if err != nil || n <= 0 || n > 65535 {
				return nil, fmt.Errorf("%s=%q: want a port number", hp.variable, pc.Published)
			}
			s.ports[key(hp.service, hp.target)] = n
			found = true
		}
		if !found {
			return nil, fmt.Errorf("docker-compose.yml: %s publishes no port %d", hp.service, hp.target)
		}
	}
	return s, nil
}

func key(service string, target uint32) string {
	return service + ":" + strconv.FormatUint(uint64(target), 10)
}

// port is the host port of service's target.
func (s *stack) port(service string, target uint32) int { return s.ports[key(service, target)] }

// unit returns the compose service name with its command and environment
// moved from the compose network to this machine's loopback:
//
//   - "0.0.0.0:<target>" (a listener of this service) becomes
//     127.0.0.1:<its host port>: services run from source face this
//     machine only;
//   - "<service>:<target>" (another service, by its compose name, as in
//     postgres:5432 or http://payments:8080) becomes 127.0.0.1:<host port>;
//   - http://localstack:4566 becomes endpoint, the SNS/SQS endpoint in use;
//   - a path under a bind mount's target becomes the same path under its
//     source (the receiver's secrets file).
func (s *stack) unit(name, endpoint string) (unit, error) {
	svc, ok := s.project.Services[name]
	if !ok {
		return unit{}, fmt.Errorf("docker-compose.yml has no service %s", name)
	}
	if svc.Build == nil || svc.Build.Target == "" {
		return unit{}, fmt.Errorf("docker-compose.yml: %s builds no target of the Dockerfile", name)
	}
	pairs := []string{"http://localstack:4566", endpoint}
	for _, hp := range hostPorts {
		local := "127.0.0.1:" + strconv.Itoa(s.port(hp.service, hp.target))
		pairs = append(pairs, key(hp.service, hp.target), local)
		if hp.service == name {
			pairs = append(pairs, "0.0.0.0:"+strconv.FormatUint(uint64(hp.target), 10), local)
		}
	}
	for _, v := range svc.Volumes {
		if v.Type == types.VolumeTypeBind {
			pairs = append(pairs, v.Target+"/", v.Source+"/")
		}
	}
	r := strings.NewReplacer(pairs...)
	u := unit{name: name, target: svc.Build.Target, env: map[string]string{}}
	for _, a := range svc.Command {
		u.args = append(u.args, r.Replace(a))
	}
	for k, v := range svc.Environment {
		if v != nil {
			u.env[k] = r.Replace(*v)
		}
	}
	return u, nil
}
