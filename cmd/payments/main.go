// Command payments is the payments service: the HTTP API that writes payments
// and their outbox rows in one transaction, and the in-process relay that
// publishes those rows to SNS, signed. Its subcommands (migrate, outbox,
// apikey, signing-key, healthcheck) are listed by `payments -h`: see usage below.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/adapters/paymentsapi"
	"github.com/payments-outbox/payments-outbox/adapters/paymentstracing"
	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/apikeystore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/retention"
	"github.com/payments-outbox/payments-outbox/cmd/internal/cli"
	"github.com/payments-outbox/payments-outbox/cmd/internal/envconfig"
	"github.com/payments-outbox/payments-outbox/cmd/internal/lifecycle"
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
  signing-key create [--id ID]
                           make a key pair for signing the events, print it once
  healthcheck              exit 0 if the local server is ready (for Docker)

'payments COMMAND -h' prints a command's usage. Configuration is read from
the environment: see docs/CONFIGURATION.md.
`

func main() {
	lifecycle.Main("payments", func(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
		return run(ctx, args, getenv, out, nil)
	})
}

type addrs = lifecycle.Addrs

// run is the whole program, callable from tests with their own environment.
// When listening is not nil it receives the addresses once serving.
func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer, listening chan<- addrs) error {
	return lifecycle.Run(dispatch(ctx, args, getenv, out, listening))
}

func dispatch(ctx context.Context, args []string, getenv func(string) string, out io.Writer, listening chan<- addrs) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		if err := cli.NoArgs(cmd, args, "payments [serve]", "Serve the API and the outbox relay until SIGTERM.", out); err != nil {
			return err
		}
		return serve(ctx, getenv, out, listening)
	case "migrate":
		if err := cli.NoArgs(cmd, args, "payments migrate", "Apply the embedded migrations and exit.", out); err != nil {
			return err
		}
		return migrate(ctx, getenv, out)
	case "outbox":
		return runOutbox(ctx, getenv, args, out)
	case "apikey":
		return runAPIKey(ctx, getenv, args, out)
	case "signing-key":
		return runSigningKey(args, out)
	case "healthcheck":
		if err := cli.NoArgs(cmd, args, "payments healthcheck", "Exit 0 if the server's /readyz on OPS_ADDR answers 200 (the container's healthcheck).", out); err != nil {
			return err
		}
		return probe.Ready(ctx, "OPS_ADDR", envconfig.New(getenv).String("OPS_ADDR", "127.0.0.1:9090"))
	case "help", "-h", "-help", "--help":
		_, err := io.WriteString(out, usage)
		return err
	default:
		return fmt.Errorf("unknown command %q; 'payments -h' lists the commands", cmd)
	}
}

func newLogger(out io.Writer, level slog.Level) *slog.Logger {
	return lifecycle.NewLogger(out, level, "payments")
}

// openDatabase reads the configuration of a command that needs the database
// only (migrate, outbox, apikey) and opens it; the caller closes the pool.
func openDatabase(ctx context.Context, getenv func(string) string) (config, *pgxpool.Pool, error) {
	cfg, err := loadConfig(getenv, false)
	if err != nil {
		return cfg, nil, err
	}
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Config{})
	return cfg, pool, err
}

func migrate(ctx context.Context, getenv func(string) string, out io.Writer) error {
	cfg, pool, err := openDatabase(ctx, getenv)
	if err != nil {
		return err
	}
	defer pool.Close()
	return lifecycle.Migrate(ctx, pool, paymentsmigrations.FS, newLogger(out, cfg.LogLevel))
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
		if err := lifecycle.Migrate(ctx, pool, paymentsmigrations.FS, log); err != nil {
			return err
		}
	}

	b, err := openBroker(ctx, cfg, log)
	if err != nil {
		return err
	}

	reg := lifecycle.NewRegistry()
	httpMetrics := httpserver.NewMetrics(reg)
	// The NOTIFY that wakes the relays is sent after the writes commit, by
	// one goroutine, not inside each write transaction: paymentstore.Notifier.
	var notifier *paymentstore.Notifier
	if cfg.OutboxNotify {
		notifier = paymentstore.NewNotifier(pool, log)
	}
	repo := paymentstore.Notifying(paymentstore.New(pool), notifier)
	svcCfg := payments.Config{AuthorizationTTL: cfg.AuthorizationTTL, MaxAmount: cfg.MaxAmount}
	if tp.Provider != nil {
		repo = paymentstracing.Repository(repo, tp.Provider)
		svcCfg.TraceContext = paymentstracing.TraceContext
	}
	svc := payments.NewService(repo, time.Now, func() string { return uuid.Must(uuid.NewV7()).String() }, svcCfg)
	auth := access.NewAuthenticator(apikeystore.New(pool), time.Now, access.AuthenticatorConfig{})
	api := paymentsapi.NewHandler(svc, auth, log, httpMetrics, paymentsapi.Config{RateLimit: cfg.APIRateLimit, TracerProvider: tp.Provider})
	ops := httpserver.NewOpsRouter(pool.Ping, log, httpMetrics, httpserver.OpsConfig{Status: b.Status, Gatherer: reg})
	servers, err := lifecycle.Listen(cfg.HTTPAddr, cfg.OpsAddr, api, ops, log)
	if err != nil {
		return err
	}
	at := servers.Addrs()
	log.InfoContext(ctx, "listening", "addr", at.API, "ops_addr", at.Ops, "api_rate_limit", cfg.APIRateLimit)
	if listening != nil {
		listening <- at
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	if notifier != nil {
		g.Go(func() error { return notifier.Run(gctx) })
	}
	g.Go(func() error { return auth.Run(gctx, log) })
	servers.Serve(gctx, g, cfg.ShutdownTimeout, func() { log.Info("shutting down") })
	// Beside the API, on every replica: the idempotency-key cleanup, the
	// expiry of authorizations and the outbox relay.
	g.Go(func() error {
		return retention.Run(gctx, retention.Job{
			Name: "idempotency keys", Delete: paymentstore.New(pool).DeleteKeysBefore,
			Retention: idempotency.KeyTTL, Every: time.Hour, Batch: 1000,
		}, time.Now, log)
	})
	// The expiry cancels through svc, the API's own write path (decorated as
	// the API's is: the relays woken, the writes traced), so its
	// payment.canceled events leave through the outbox like any other.
	expiry := payments.NewExpiry(svc, paymentstore.New(pool).ExpiredAuthorizations, log,
		payments.ExpiryConfig{Interval: cfg.AuthorizationExpiryInterval})
	g.Go(func() error { return expiry.Run(gctx) })
	if err := startRelay(gctx, g, cfg, pool, b, log, reg, tp.Provider); err != nil {
		cancel() // stop what did start, and wait for it, before reporting
		_ = g.Wait()
		return err
	}
	return g.Wait()
}
