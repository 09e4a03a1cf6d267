// Command devstack is `make dev`: the stack of docker-compose.yml without
// Docker, from this machine's own binaries, on 127.0.0.1 at the same host
// ports. It starts a throw-away Postgres (initdb into a temporary
// directory, as the postgres user when run as root: Postgres refuses root),
// an SNS/SQS endpoint (scripts/moto_server.py, or the one AWS_ENDPOINT_URL
// names, e.g. a LocalStack), creates the AWS resources with
// localstack/init-aws.sh and the databases with scripts/create-databases.sql,
// runs compose's one-shot jobs (the schema, the demo's API key), then the
// three services and the demo webhook receiver, built from this checkout.
//
//	go -C tools build -o ../.dev/bin/devstack ./devstack && .dev/bin/devstack -repo .
//
// Each service gets the command and environment docker-compose.yml gives it
// (the demo's secrets among them), moved from the compose network to
// loopback: http://payments:8080 becomes http://127.0.0.1:8080, a listener's
// 0.0.0.0:8080 becomes 127.0.0.1:8080, and so on, with the *_HOST_PORT
// variables compose reads. Every log is in .dev/logs/. While it runs,
// .dev/demo.mk tells `make demo` where the receiver is and how to read its
// log. What is missing is named before anything starts: the Postgres
// binaries, python3 with moto, the aws CLI, a port already taken (with the
// variable that moves it).
//
// SIGINT (Ctrl-C), SIGTERM or SIGHUP stops everything it started, the
// services first, and removes the temporary Postgres: nothing is left
// running.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	err := run(ctx, os.Args[1:], os.Getenv, os.Environ(), os.Stdout, realMachine())
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "make dev:", err)
		os.Exit(1)
	}
}

type config struct {
	repo, state string // the checkout; make dev's directory (.dev)
	endpoint    string // AWS_ENDPOINT_URL: "" starts moto
	pgBinDir    string // PG_BINDIR
}

// How long each piece may take to become ready: a service's start-up
// includes its migrations, and the machine may be busy.
const (
	readyTimeout = 90 * time.Second
	stopGrace    = 25 * time.Second // longer than the services' SHUTDOWN_TIMEOUT (15s)
)

// run starts the stack and keeps it until ctx is done, then stops it.
// environ is the environment compose would interpolate docker-compose.yml
// with; getenv reads the same.
func run(ctx context.Context, args []string, getenv func(string) string, environ []string, out io.Writer, m machine) error {
	fs := flag.NewFlagSet("devstack", flag.ContinueOnError)
	fs.SetOutput(out)
	var cfg config
	fs.StringVar(&cfg.repo, "repo", "..", "the repository's root (docker-compose.yml, scripts/, localstack/)")
	fs.StringVar(&cfg.state, "state", "", "make dev's directory: the built binaries, logs/, demo.mk (default: <repo>/.dev)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	repo, err := filepath.Abs(cfg.repo)
	if err != nil {
		return err
	}
	cfg.repo = repo
	if cfg.state == "" {
		cfg.state = filepath.Join(repo, ".dev")
	}
	if cfg.state, err = filepath.Abs(cfg.state); err != nil {
		return err
	}
	cfg.endpoint = getenv("AWS_ENDPOINT_URL")
	cfg.pgBinDir = getenv("PG_BINDIR")

	s, err := loadStack(ctx, repo, environ)
	if err != nil {
		return err
	}
	f, missing := m.preflight(cfg, s)
	if len(missing) > 0 {
		return fmt.Errorf("%w:\n  - %s", errMissing, strings.Join(missing, "\n  - "))
	}
	d := &dev{cfg: cfg, stack: s, found: f, getenv: getenv, environ: environ, out: out}
	return d.run(ctx)
}

// dev is one run of make dev: what it started, to stop it in reverse.
type dev struct {
	cfg      config
	stack    *stack
	found    found
	getenv   func(string) string
	environ  []string
	out      io.Writer
	children []*child
	pgTemp   string // the throw-away Postgres' directory
}

func (d *dev) say(format string, args ...any) { fmt.Fprintf(d.out, "make dev: "+format+"\n", args...) }

func (d *dev) logs() string { return filepath.Join(d.cfg.state, "logs") }
func (d *dev) bin() string  { return filepath.Join(d.cfg.state, "bin") }

func (d *dev) run(ctx context.Context) (err error) {
	for _, dir := range []string{d.logs(), d.bin()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	d.say("building the services and the demo receiver into %s", d.bin())
	if err := d.build(ctx); err != nil {
		return err
	}
	defer func() {
		if serr := d.shutdown(); serr != nil && err == nil {
			err = serr
		}
	}()
	dbURL, err := d.startPostgres(ctx)
	if err != nil {
		return err
	}
	endpoint, err := d.startSNSSQS(ctx)
	if err != nil {
		return err
	}
	resources, err := d.initAWS(ctx, endpoint)
	if err != nil {
		return err
	}
	if err := d.startServices(ctx, endpoint, resources); err != nil {
		return err
	}
	if err := d.writeDemoMk(); err != nil {
		return err
	}
	d.summary(dbURL, endpoint)

	// Until Ctrl-C, or until something exits on its own.
	cases := make(chan *child, len(d.children))
	for _, c := range d.children {
		go func() {
			<-c.done
			cases <- c
		}()
	}
	select {
	case <-ctx.Done():
		d.say("stopping everything it started")
		return nil
	case c := <-cases:
		return fmt.Errorf("%s exited (%v); the end of %s:\n%s", c.name, c.err, c.log, c.tail(20))
	}
}

// build compiles the services and the receiver from this checkout, each in
// its own module (GOWORK=off), as the Dockerfile does.
func (d *dev) build(ctx context.Context) error {
	for _, b := range []struct {
		dir, out string
		pkgs     []string
	}{
		{d.cfg.repo, d.bin() + "/", []string{"./cmd/payments", "./cmd/ledger", "./cmd/webhooks"}},
		{filepath.Join(d.cfg.repo, "tools"), filepath.Join(d.bin(), "webhook-receiver"), []string{"./webhookreceiver"}},
	} {
		cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", b.out}, b.pkgs...)...)
		cmd.Dir = b.dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w\n%s", strings.Join(b.pkgs, " "), err, out)
		}
	}
	return nil
}

// startPostgres initialises a cluster in a new temporary directory and
// starts it on 127.0.0.1:POSTGRES_HOST_PORT, trusting local connections
// (the demo's, like compose's: the password "postgres" is accepted and
// unneeded). It returns the server's URL.
func (d *dev) startPostgres(ctx context.Context) (string, error) {
	tmp, err := os.MkdirTemp("", "payments-outbox-dev-")
	if err != nil {
		return "", err
	}
	d.pgTemp = tmp
	if d.found.pgCred != nil {
		if err := os.Chown(tmp, int(d.found.pgCred.Uid), int(d.found.pgCred.Gid)); err != nil {
			return "", fmt.Errorf("hand %s to the postgres user: %w", tmp, err)
		}
	}
	data := filepath.Join(tmp, "data")
	port := d.stack.port("postgres", 5432)
	env := []string{"PATH=" + d.getenv("PATH"), "LC_ALL=C"}
	d.say("Postgres (%s) on 127.0.0.1:%d, its data in %s (removed when make dev stops)", d.found.pgBin, port, tmp)
	initdb := exec.CommandContext(ctx, filepath.Join(d.found.pgBin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync")
	initdb.Env = env
	initdb.Dir = tmp
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: d.found.pgCred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return "", fmt.Errorf("initdb: %w\n%s", err, out)
	}
	// fsync off: the data is thrown away when make dev stops, and a crash
	// of this machine loses nothing anyone keeps.
	pg := exec.Command(filepath.Join(d.found.pgBin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-k", tmp, "-c", "fsync=off")
	pg.Env = env
	pg.Dir = tmp
	c, err := d.start("postgres", pg, syscall.SIGINT, d.found.pgCred) // SIGINT: fast shutdown
	if err != nil {
		return "", err
	}
	server := fmt.Sprintf("postgres://postgres@127.0.0.1:%d", port)
	if err := c.waitReady(ctx, readyTimeout, func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, server+"/postgres?sslmode=disable")
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	}); err != nil {
		return "", err
	}
	// The databases compose's Postgres creates on its first start, from the
	// same file.
	sql, err := os.ReadFile(filepath.Join(d.cfg.repo, "scripts", "create-databases.sql"))
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, server+"/postgres?sslmode=disable")
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	for _, stmt := range statements(string(sql)) {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return "", fmt.Errorf("scripts/create-databases.sql: %s: %w", stmt, err)
		}
	}
	return server, nil
}

// statements splits a SQL file of simple statements on ";", comments
// aside: CREATE DATABASE runs outside a transaction, one at a time.
func statements(sql string) []string {
	var lines []string
	for _, l := range strings.Split(sql, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			lines = append(lines, l)
		}
	}
	var out []string
	for _, s := range strings.Split(strings.Join(lines, "\n"), ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// startSNSSQS returns the SNS/SQS endpoint: the user's AWS_ENDPOINT_URL,
// or moto_server started on 127.0.0.1:LOCALSTACK_HOST_PORT, in the account
// LocalStack uses (000000000000), so that the ARNs and queue URLs are
// compose's.
func (d *dev) startSNSSQS(ctx context.Context) (string, error) {
	if d.cfg.endpoint != "" {
		d.say("SNS/SQS: %s (AWS_ENDPOINT_URL)", d.cfg.endpoint)
		return d.cfg.endpoint, nil
	}
	port := d.stack.port("localstack", 4566)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	d.say("SNS/SQS: moto on %s (scripts/moto_server.py)", endpoint)
	cmd := exec.Command(d.found.python, filepath.Join(d.cfg.repo, "scripts", "moto_server.py"), "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Env = append(os.Environ(), "MOTO_ACCOUNT_ID=000000000000")
	c, err := d.start("moto", cmd, syscall.SIGTERM, nil)
	if err != nil {
		return "", err
	}
	return endpoint, c.waitReady(ctx, readyTimeout, httpOK(endpoint+"/moto-api/"))
}

// initAWS runs localstack/init-aws.sh against endpoint, as compose's
// LocalStack runs it on start, and returns the variables it prints
// (PAYMENTS_TOPIC_ARN, LEDGER_QUEUE_URL, …).
func (d *dev) initAWS(ctx context.Context, endpoint string) (map[string]string, error) {
	log := filepath.Join(d.logs(), "init-aws.log")
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, d.found.bash, filepath.Join(d.cfg.repo, "localstack", "init-aws.sh"), "--print-env")
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+endpoint, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1")
	cmd.Stderr = f
	stdout, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("localstack/init-aws.sh: %w; see %s", err, log)
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(stdout)))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		if !ok || strings.ContainsAny(v, `'"\$`) {
			return nil, fmt.Errorf("localstack/init-aws.sh printed %q, not export NAME=value", sc.Text())
		}
		vars[k] = v
	}
	for _, k := range []string{"PAYMENTS_TOPIC_ARN", "LEDGER_QUEUE_URL", "LEDGER_DLQ_URL", "WEBHOOKS_QUEUE_URL", "WEBHOOKS_DLQ_URL"} {
		if vars[k] == "" {
			return nil, fmt.Errorf("localstack/init-aws.sh printed no %s; see %s", k, log)
		}
	}
	return vars, nil
}

// startServices runs compose's one-shot jobs, then its services, each
// ready before the next starts (compose's depends_on order).
func (d *dev) startServices(ctx context.Context, endpoint string, resources map[string]string) error {
	base := []string{"PATH=" + d.getenv("PATH"), "HOME=" + d.getenv("HOME")}
	environ := func(u unit) []string {
		env := append([]string(nil), base...)
		for k, v := range u.env {
			if r, ok := resources[k]; ok {
				v = r // the topic's and queues' names as this endpoint gives them
			}
			env = append(env, k+"="+v)
		}
		return env
	}
	for _, name := range jobNames {
		u, err := d.stack.unit(name, endpoint)
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, filepath.Join(d.bin(), u.target), u.args...)
		cmd.Env = environ(u)
		out, err := cmd.CombinedOutput()
		_ = os.WriteFile(filepath.Join(d.logs(), name+".log"), out, 0o644)
		if err != nil {
			return fmt.Errorf("%s (%s %s): %w\n%s", name, u.target, strings.Join(u.args, " "), err, out)
		}
	}
	for _, name := range serviceNames {
		u, err := d.stack.unit(name, endpoint)
		if err != nil {
			return err
		}
		var ready string
		switch name {
		case "webhook-receiver":
			ready = fmt.Sprintf("http://127.0.0.1:%d/healthz", d.stack.port(name, 8083))
		case "webhooks":
			// The demo receiver is on loopback, which the address guard
			// refuses unless private targets are allowed. Compose allows
			// them for its receiver's private address on the compose
			// network; make dev, for loopback, and for nothing else runs
			// here. Production keeps the default, false.
			u.env["WEBHOOKS_ALLOW_PRIVATE_TARGETS"] = "true"
			fallthrough
		default:
			ops := strings.TrimPrefix(u.env["OPS_ADDR"], "127.0.0.1:")
			if !strings.HasPrefix(u.env["OPS_ADDR"], "127.0.0.1:") {
				return fmt.Errorf("%s: OPS_ADDR %q is not on loopback after the move from compose", name, u.env["OPS_ADDR"])
			}
			ready = "http://127.0.0.1:" + ops + "/readyz"
		}
		cmd := exec.Command(filepath.Join(d.bin(), u.target), u.args...)
		cmd.Env = environ(u)
		c, err := d.start(name, cmd, syscall.SIGTERM, nil)
		if err != nil {
			return err
		}
		if err := c.waitReady(ctx, readyTimeout, httpOK(ready)); err != nil {
			return err
		}
		d.say("%s ready", name)
	}
	return nil
}

func (d *dev) start(name string, cmd *exec.Cmd, stop syscall.Signal, cred *syscall.Credential) (*child, error) {
	c, err := startChild(name, cmd, filepath.Join(d.logs(), name+".log"), stop, stopGrace, cred)
	if err != nil {
		return nil, err
	}
	d.children = append(d.children, c)
	return c, nil
}

// demoMk is where make dev tells make demo, while it runs, what differs
// from compose: the receiver's URL and log, and the host ports.
func (d *dev) demoMk() string { return filepath.Join(d.cfg.state, "demo.mk") }

func (d *dev) writeDemoMk() error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by make dev (pid %d) for make demo, and removed when make dev stops.\n", os.Getpid())
	fmt.Fprintf(&b, "# The guard keeps a file left by a killed make dev from steering make demo.\n")
	fmt.Fprintf(&b, "ifeq ($(shell kill -0 %d 2>/dev/null && echo running),running)\n", os.Getpid())
	fmt.Fprintf(&b, "DEMO_RECEIVER_URL := http://127.0.0.1:%d/webhooks\n", d.stack.port("webhook-receiver", 8083))
	fmt.Fprintf(&b, "DEMO_RECEIVER_LOGS := cat %s\n", filepath.Join(d.logs(), "webhook-receiver.log"))
	for _, hp := range hostPorts {
		fmt.Fprintf(&b, "%s := %d\n", hp.variable, d.stack.port(hp.service, hp.target))
	}
	b.WriteString("endif\n")
	return os.WriteFile(d.demoMk(), []byte(b.String()), 0o644)
}

func (d *dev) summary(dbURL, endpoint string) {
	p := d.stack.port
	d.say(`the stack is up on 127.0.0.1; Ctrl-C stops it all.
  payments          http://127.0.0.1:%d   (ops http://127.0.0.1:%d)
  ledger            http://127.0.0.1:%d   (ops http://127.0.0.1:%d)
  webhooks          http://127.0.0.1:%d   (ops http://127.0.0.1:%d)
  demo receiver     http://127.0.0.1:%d/webhooks
  Postgres          %s (payments, ledger, webhooks)
  SNS/SQS           %s
  logs              %s/
In another terminal: make demo`,
		p("payments", 8080), p("payments", 9090), p("ledger", 8081), p("ledger", 9091),
		p("webhooks", 8082), p("webhooks", 9092), p("webhook-receiver", 8083), dbURL, endpoint, d.logs())
}

// shutdown stops the services and the receiver together (each drains what
// it has in flight), then moto, then Postgres, which they used until then;
// it removes the throw-away Postgres and demo.mk, and reports what did not
// end cleanly.
func (d *dev) shutdown() error {
	_ = os.Remove(d.demoMk())
	var errs []error
	for _, tier := range [][]string{serviceNames, {"moto"}, {"postgres"}} {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, c := range d.children {
			if !slices.Contains(tier, c.name) {
				continue
			}
			wg.Go(func() {
				err := c.halt()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				} else {
					d.say("stopped %s", c.name)
				}
			})
		}
		wg.Wait()
	}
	if d.pgTemp != "" {
		if err := os.RemoveAll(d.pgTemp); err != nil {
			errs = append(errs, err)
		} else {
			d.say("removed %s", d.pgTemp)
		}
	}
	return errors.Join(errs...)
}
