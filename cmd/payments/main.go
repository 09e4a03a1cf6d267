// Command payments is the payments service: the HTTP API that writes payments
// and their outbox rows in one transaction, and the in-process relay that
// publishes those rows to SNS.
//
//	payments                 serve (the default)
//	payments migrate         apply the embedded migrations and exit
//	payments outbox stats    pending and dead rows, oldest pending age
//	payments outbox requeue  --id ID | --all: DEAD rows back to PENDING
//	payments outbox partitions [--set N]: who holds which partition; change the count
//	payments apikey          create | list | revoke API keys
//	payments healthcheck     exit 0 if the local server is ready (for Docker)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/adapters/paymentsapi"
	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/apikeystore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/cmd/internal/cli"
	"github.com/payments-outbox/payments-outbox/cmd/internal/envconfig"
	"github.com/payments-outbox/payments-outbox/cmd/internal/probe"
	"github.com/payments-outbox/payments-outbox/cmd/internal/telemetry"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

const usage = `usage: payments [command]

  serve                    the API and the outbox relay (the default)
  migrate                  apply the embedded migrations and exit
  outbox stats             pending and dead rows, oldest pending age
  outbox requeue --id ID | --all
                           DEAD rows back to PENDING
  outbox partitions [--set N]
                           which relay holds which partition; change the count
  apikey create --merchant ID | --platform --name NAME [--key KEY]
                           make an API key and print it, once
  apikey list              the keys' prefixes and ids, never the keys
  apikey revoke --id ID    refuse a key from now on
  healthcheck              exit 0 if the local server is ready (for Docker)

'payments COMMAND -h' prints a command's usage. Configuration is read from
the environment: see README.md.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, nil)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "payments:", err)
		os.Exit(1)
	}
}

// addrs are the addresses serve listens on: the API's and the operational
// endpoints'.
type addrs struct{ API, Ops string }

// run is the whole program, callable from tests with their own environment.
// When listening is not nil it receives the addresses once serving.
func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer, listening chan<- addrs) error {
	err := dispatch(ctx, args, getenv, out, listening)
	if errors.Is(err, flag.ErrHelp) {
		return nil // -h or --help: the command printed its usage, as asked
	}
	return err
}

func dispatch(ctx context.Context, args []string, getenv func(string) string, out io.Writer, listening chan<- addrs) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	// noArgs reads the arguments of a command that takes none but -h.
	noArgs := func(synopsis, doc string) error {
		if err := cli.Parse(cli.NewFlagSet(synopsis, doc, out), args); err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		return nil
	}
	switch cmd {
	case "serve":
		if err := noArgs("payments [serve]", "Serve the API and the outbox relay until SIGTERM."); err != nil {
			return err
		}
		return serve(ctx, getenv, out, listening)
	case "migrate":
		if err := noArgs("payments migrate", "Apply the embedded migrations and exit."); err != nil {
			return err
		}
		return migrate(ctx, getenv, out)
	case "outbox":
		return runOutbox(ctx, getenv, args, out)
	case "apikey":
		return runAPIKey(ctx, getenv, args, out)
	case "healthcheck":
		if err := noArgs("payments healthcheck", "Exit 0 if the server's /readyz on OPS_ADDR answers 200 (the container's healthcheck)."); err != nil {
			return err
		}
		return healthcheck(ctx, getenv)
	case "help", "-h", "-help", "--help":
		_, err := io.WriteString(out, usage)
		return err
	default:
		return fmt.Errorf("unknown command %q; 'payments -h' lists the commands", cmd)
	}
}

// newLogger is the service's one logger. Every line logged with a request's
// context carries the request's id (httpserver.LogRequestIDs), the one its
// answer's X-Request-Id gave the client.
func newLogger(out io.Writer, level slog.Level) *slog.Logger {
	return slog.New(httpserver.LogRequestIDs(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: level}))).With("service", "payments")
}

func migrate(ctx context.Context, getenv func(string) string, out io.Writer) error {
	cfg, err := loadConfig(getenv, false)
	if err != nil {
		return err
	}
	log := newLogger(out, cfg.LogLevel)
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Config{})
	if err != nil {
		return err
	}
	defer pool.Close()
	return applyMigrations(ctx, pool, log)
}

func applyMigrations(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	res, err := postgres.Migrate(ctx, pool, paymentsmigrations.FS)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "migrations applied", "count", len(res))
	return nil
}

func serve(ctx context.Context, getenv func(string) string, out io.Writer, listening chan<- addrs) error {
	cfg, err := loadConfig(getenv, true)
	if err != nil {
		return err
	}
	log := newLogger(out, cfg.LogLevel)
	tp, err := telemetry.Start(ctx, cfg.Tracing, "payments", telemetry.FlushTimeout, log)
	if err != nil {
		return err
	}
	defer tp.Shutdown()
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Config{DefaultMaxConns: defaultPoolSize, TracerProvider: tp.Provider})
	if err != nil {
		return err
	}
	defer pool.Close()
	if cfg.MigrateOnStart {
		if err := applyMigrations(ctx, pool, log); err != nil {
			return err
		}
	}

	b, err := openBroker(ctx, cfg, log)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	httpMetrics := httpserver.NewMetrics(reg)
	// The NOTIFY that wakes the relays is sent after the writes commit, by
	// one goroutine, not inside each write transaction: paymentstore.Notifier.
	var notifier *paymentstore.Notifier
	if cfg.OutboxNotify {
		notifier = paymentstore.NewNotifier(pool, log)
	}
	repo := paymentstore.Notifying(paymentstore.New(pool), notifier)
	var svcCfg payments.Config
	if tp.Provider != nil {
		repo = tracing.Payments(repo, tp.Provider)
		svcCfg.TraceContext = tracing.PaymentsTraceContext
	}
	svc := payments.NewService(repo, time.Now, func() string { return uuid.Must(uuid.NewV7()).String() }, svcCfg)
	auth := access.NewAuthenticator(apikeystore.New(pool), time.Now, access.CacheTTL)
	api := newServer(paymentsapi.NewHandler(svc, auth, log, paymentsapi.Config{RateLimit: cfg.APIRateLimit, Metrics: httpMetrics, TracerProvider: tp.Provider}), log)
	ops := newServer(httpserver.NewOpsRouter(httpserver.Ops{
		Log: log, Ready: pool.Ping, Status: b.status, Metrics: httpMetrics, Gatherer: reg,
	}), log)
	apiLn, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	opsLn, err := net.Listen("tcp", cfg.OpsAddr)
	if err != nil {
		apiLn.Close()
		return fmt.Errorf("listen on OPS_ADDR %s: %w", cfg.OpsAddr, err)
	}
	log.InfoContext(ctx, "listening", "addr", apiLn.Addr().String(), "ops_addr", opsLn.Addr().String(), "api_rate_limit", cfg.APIRateLimit)
	if listening != nil {
		listening <- addrs{API: apiLn.Addr().String(), Ops: opsLn.Addr().String()}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	if notifier != nil {
		g.Go(func() error { return notifier.Run(gctx) })
	}
	g.Go(func() error { return auth.Run(gctx, log) })
	for _, s := range []struct {
		srv *http.Server
		ln  net.Listener
	}{{api, apiLn}, {ops, opsLn}} {
		g.Go(func() error {
			if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	g.Go(func() error {
		<-gctx.Done() // a signal arrived, or another part failed
		log.Info("shutting down")
		sctx, cancel := context.WithTimeout(context.WithoutCancel(gctx), cfg.ShutdownTimeout)
		defer cancel()
		// In-flight requests finish; their transactions commit or roll
		// back. The ops listener stops with the API, not before, so the
		// orchestrator sees the replica until it is gone.
		return errors.Join(api.Shutdown(sctx), ops.Shutdown(sctx))
	})
	if err := startBackground(gctx, g, cfg, pool, b, log, reg, tp.Provider); err != nil {
		cancel() // stop what did start, and wait for it, before reporting
		_ = g.Wait()
		return err
	}
	return g.Wait()
}

// newServer is an http.Server with the timeouts both listeners need.
func newServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      15 * time.Second,
		IdleTimeout:       60 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// healthcheck asks the server's ops listener (OPS_ADDR) whether it is
// ready: the container's healthcheck.
func healthcheck(ctx context.Context, getenv func(string) string) error {
	return probe.Ready(ctx, "OPS_ADDR", envconfig.New(getenv).String("OPS_ADDR", ":9090"))
}
