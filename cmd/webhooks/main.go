// Command webhooks is the webhooks service: it consumes the payments
// events from SQS through the shared inbox, in the async mode, fans each
// out into one delivery per subscribed endpoint of the event's merchant,
// and delivers them signed by the Standard Webhooks specification,
// retried on a schedule (docs/WEBHOOKS.md). Its subcommands are listed by
// `webhooks -h`.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/webhookstore"
	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/adapters/webhooksender"
	"github.com/payments-outbox/payments-outbox/adapters/webhooksmetrics"
	"github.com/payments-outbox/payments-outbox/adapters/webhookstracing"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/retention"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
	"github.com/payments-outbox/payments-outbox/cmd/internal/cli"
	"github.com/payments-outbox/payments-outbox/cmd/internal/consumer"
	"github.com/payments-outbox/payments-outbox/cmd/internal/envconfig"
	"github.com/payments-outbox/payments-outbox/cmd/internal/inboxcmd"
	"github.com/payments-outbox/payments-outbox/cmd/internal/lifecycle"
	"github.com/payments-outbox/payments-outbox/cmd/internal/probe"
	webhooksmigrations "github.com/payments-outbox/payments-outbox/migrations/webhooks"
)

const usage = `usage: webhooks [command]

  serve                    the SQS consumer, the fan-out, the delivery
                           workers and the merchant API (the default)
  migrate                  apply the embedded migrations and exit
  inbox stats              the inbox's backlog: pending, oldest age, parked
  inbox retry --id ID | --all-parked
                           put parked inbox rows back to pending
  dlq redrive              move the DLQ's messages back to the queue
  healthcheck              exit 0 if the local server is ready (for Docker)

'webhooks COMMAND -h' prints a command's usage. Configuration is read from
the environment: see docs/CONFIGURATION.md.
`

func main() {
	lifecycle.Main("webhooks", func(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
		return run(ctx, args, getenv, out, nil)
	})
}

type addrs = lifecycle.Addrs

// deliveryRetention is how long a delivered or canceled delivery, and its
// attempts, stay listed: a month of history for the merchant.
const deliveryRetention = 30 * 24 * time.Hour

// run is the whole program, callable from tests with their own arguments and
// environment. When listening is not nil it receives the addresses once
// serving.
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
		if err := cli.NoArgs(cmd, args, "webhooks [serve]", "Run the SQS consumer, the fan-out, the delivery workers and the merchant API until SIGTERM.", out); err != nil {
			return err
		}
		return serve(ctx, getenv, out, listening)
	case "migrate":
		if err := cli.NoArgs(cmd, args, "webhooks migrate", "Apply the embedded migrations and exit.", out); err != nil {
			return err
		}
		return migrate(ctx, getenv, out)
	case "inbox":
		return runInbox(ctx, args, getenv, out)
	case "dlq":
		return inboxcmd.Redrive(ctx, "webhooks", args, queues(getenv), out)
	case "healthcheck":
		if err := cli.NoArgs(cmd, args, "webhooks healthcheck", "Exit 0 if the server's /readyz on OPS_ADDR answers 200 (the container's healthcheck).", out); err != nil {
			return err
		}
		return probe.Ready(ctx, "OPS_ADDR", envconfig.New(getenv).String("OPS_ADDR", "127.0.0.1:9092"))
	case "help", "-h", "-help", "--help":
		_, err := io.WriteString(out, usage)
		return err
	default:
		return fmt.Errorf("unknown command %q; 'webhooks -h' lists the commands", cmd)
	}
}

func newLogger(out io.Writer, level slog.Level) *slog.Logger {
	return lifecycle.NewLogger(out, level, "webhooks")
}

// queues opens the SQS client and names the queues of the configuration
// read through getenv, for `webhooks dlq redrive`.
func queues(getenv func(string) string) inboxcmd.Queues {
	return func(ctx context.Context) (sqs.API, string, string, error) {
		cfg, err := loadConfig(getenv, true)
		if err != nil {
			return nil, "", "", err
		}
		client, err := sqs.NewClient(ctx, cfg.AWSRegion, cfg.AWSEndpointURL)
		return client, cfg.DLQURL, cfg.QueueURL, err
	}
}

func migrate(ctx context.Context, getenv func(string) string, out io.Writer) error {
	cfg, err := loadConfig(getenv, false)
	if err != nil {
		return err
	}
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Config{})
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer pool.Close()
	return applyMigrations(ctx, pool, newLogger(out, cfg.LogLevel))
}

func applyMigrations(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	return lifecycle.Migrate(ctx, pool, webhooksmigrations.FS, log)
}

func serve(ctx context.Context, getenv func(string) string, out io.Writer, listening chan<- addrs) error {
	cfg, err := loadConfig(getenv, true)
	if err != nil {
		return err
	}
	p, err := consumer.Start(ctx, cfg.startup(), out)
	if err != nil {
		return err
	}
	defer p.Close()
	sealer, err := webhooks.NewSealer(cfg.SecretsKey)
	if err != nil {
		return fmt.Errorf("WEBHOOKS_SECRETS_KEY: %w", err)
	}
	webhookMetrics, err := webhooksmetrics.New(p.Registry)
	if err != nil {
		return err
	}
	store := webhookstore.New(p.Pool)
	if cfg.AllowPrivateTargets {
		p.Log.WarnContext(ctx, "WEBHOOKS_ALLOW_PRIVATE_TARGETS=true: webhooks may be sent over http and to private and loopback addresses; never in production")
	}
	sender := webhooksender.New(webhooksender.Config{AllowPrivateTargets: cfg.AllowPrivateTargets})
	// Each port is traced by its decorator when tracing is configured (and
	// is itself otherwise): the store and the sender know nothing of it.
	tp := p.TracerProvider
	worker := webhooks.NewWorker(webhookstracing.Deliveries(store, tp), webhookstracing.Sender(sender, tp), sealer, cfg.Schedule, p.Log, webhookMetrics, time.Now, cfg.workerConfig())
	svc := webhooks.NewService(webhookstracing.Endpoints(store, tp), sealer, time.Now, cfg.serviceConfig())
	api, err := newAPI(svc, cfg, p.Log, p.HTTPMetrics, p.TracerProvider)
	if err != nil {
		return err
	}
	return consumer.Serve(ctx, p, consumer.Service[webhooks.Fanout, webhooks.Event]{
		Store:   store,
		Inbox:   webhookstracing.Inbox(store, tp),
		Handler: webhooks.Handler{MaxAmount: cfg.MaxAmount},
		// The async mode only: a message is recorded and acknowledged at
		// once, and the processor fans it out in the inbox row's
		// transaction, so no HTTP call runs inside a transaction and a slow
		// receiver holds no inbox row.
		Mode:      inbox.Async,
		Processor: cfg.processorConfig(worker),
		API:       api,
		// The workers claim nothing once the context ends; an attempt in
		// flight finishes within SHUTDOWN_TIMEOUT or is cut and its lease
		// released.
		Run: []func(context.Context) error{
			worker.Run,
			func(ctx context.Context) error {
				return worker.RefreshGauges(ctx, consumer.GaugeInterval, webhooksmetrics.TopEndpoints)
			},
		},
		Retention: []retention.Job{
			{Name: "webhook deliveries", Delete: store.DeleteDeliveriesBefore, Retention: deliveryRetention, Every: time.Hour, Batch: 1000},
			{Name: "webhook idempotency keys", Delete: store.DeleteKeysBefore, Retention: idempotency.KeyTTL, Every: time.Hour, Batch: 1000},
		},
		LogAttrs: []any{"delivery_workers", cfg.DeliveryWorkers, "endpoint_concurrency", cfg.EndpointConcurrency, "merchant_concurrency", cfg.MerchantConcurrency, "retry_schedule", cfg.Schedule.Delays()},
	}, listening)
}

// runInbox runs the inbox commands, which need the database only:
//
//	webhooks inbox stats
//	webhooks inbox retry --id ID | --all-parked
func runInbox(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	sub, args, err := cli.Subcommand("inbox", args, "webhooks inbox stats | retry --id ID | --all-parked",
		"Inspect the inbox's backlog, or put parked rows back.", "stats, or retry --id ID | --all-parked", out)
	if err != nil {
		return err
	}
	switch sub {
	case "stats":
		return inboxcmd.Stats(ctx, "webhooks", "Print the inbox rows waiting to be fanned out, the oldest one's age, the parked rows and the rows of types this version does not deliver.",
			args, webhooks.EventTypes(), openStore(getenv), out)
	case "retry":
		return inboxcmd.Retry(ctx, "webhooks", "Put parked inbox rows back with a fresh set of attempts; the processor fans them out at its next claim.",
			args, openStore(getenv), out)
	default:
		return fmt.Errorf("inbox: unknown subcommand %q (want stats or retry)", sub)
	}
}

// openStore opens the webhooks database of the configuration read through
// getenv, for the inbox commands.
func openStore(getenv func(string) string) inboxcmd.Open {
	return func(ctx context.Context) (inboxcmd.Store, func(), error) {
		cfg, err := loadConfig(getenv, false)
		if err != nil {
			return nil, nil, err
		}
		pool, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Config{})
		if err != nil {
			return nil, nil, fmt.Errorf("DATABASE_URL: %w", err)
		}
		return webhookstore.New(pool), pool.Close, nil
	}
}
