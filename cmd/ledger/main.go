// Command ledger is the ledger service: it consumes payment events from SQS
// through an inbox, posts them as balanced double-entry transactions exactly
// once, and serves balances and entries over HTTP. Its subcommands (migrate,
// dlq, reconcile, inbox, healthcheck) are listed by `ledger -h`: see usage
// below.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/ledgerapi"
	"github.com/payments-outbox/payments-outbox/adapters/ledgermetrics"
	"github.com/payments-outbox/payments-outbox/adapters/ledgertracing"
	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/cmd/internal/cli"
	"github.com/payments-outbox/payments-outbox/cmd/internal/consumer"
	"github.com/payments-outbox/payments-outbox/cmd/internal/envconfig"
	"github.com/payments-outbox/payments-outbox/cmd/internal/inboxcmd"
	"github.com/payments-outbox/payments-outbox/cmd/internal/lifecycle"
	"github.com/payments-outbox/payments-outbox/cmd/internal/probe"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

const usage = `usage: ledger [command]

  serve                    the SQS consumer and the HTTP API (the default)
  migrate                  apply the embedded migrations and exit
  dlq redrive              move the DLQ's messages back to the queue
  reconcile [--payments-database-url URL] [--grace 1m]
                           compare the ledger with the payments database;
                           exit status 1 on any divergence
  inbox process [--once]   the inbox processor alone, until SIGTERM
  inbox stats              the inbox's backlog: pending, oldest age, parked
  inbox retry --id ID | --all-parked
                           put parked inbox rows back to pending
  healthcheck              exit 0 if the local server is ready (for Docker)

'ledger COMMAND -h' prints a command's usage. Configuration is read from the
environment: see docs/CONFIGURATION.md.
`

func main() {
	lifecycle.Main("ledger", func(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
		return run(ctx, args, getenv, out, nil)
	})
}

// errDivergence is returned by `ledger reconcile` when it printed at least
// one divergence, so the process exits with status 1.
var errDivergence = errors.New("the ledger diverges from the payments database")

type addrs = lifecycle.Addrs

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
		if err := cli.NoArgs(cmd, args, "ledger [serve]", "Run the SQS consumer, the inbox processor (LEDGER_INBOX_WORKERS) and the HTTP API until SIGTERM.", out); err != nil {
			return err
		}
		return serve(ctx, getenv, out, listening)
	case "migrate":
		if err := cli.NoArgs(cmd, args, "ledger migrate", "Apply the embedded migrations and exit.", out); err != nil {
			return err
		}
		return migrate(ctx, getenv, out)
	case "dlq":
		return inboxcmd.Redrive(ctx, "ledger", args, queues(getenv), out)
	case "reconcile":
		return reconcile(ctx, args, getenv, out)
	case "inbox":
		return runInbox(ctx, args, getenv, out, listening)
	case "healthcheck":
		if err := cli.NoArgs(cmd, args, "ledger healthcheck", "Exit 0 if the server's /readyz on OPS_ADDR answers 200 (the container's healthcheck).", out); err != nil {
			return err
		}
		return probe.Ready(ctx, "OPS_ADDR", envconfig.New(getenv).String("OPS_ADDR", "127.0.0.1:9091"))
	case "help", "-h", "-help", "--help":
		_, err := io.WriteString(out, usage)
		return err
	default:
		return fmt.Errorf("unknown command %q; 'ledger -h' lists the commands", cmd)
	}
}

func newLogger(out io.Writer, level slog.Level) *slog.Logger {
	return lifecycle.NewLogger(out, level, "ledger")
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
	return lifecycle.Migrate(ctx, pool, ledgermigrations.FS, log)
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
	store := ledgerstore.New(p.Pool)
	ledgerMetrics, err := ledgermetrics.New(p.Registry)
	if err != nil {
		return err
	}
	api := ledgerapi.NewHandler(ledgers.NewService(store), cfg.APITokens, p.Log, p.HTTPMetrics, ledgerapi.Config{TracerProvider: p.TracerProvider})
	if cfg.APITokens.Len() == 0 {
		p.Log.WarnContext(ctx, "LEDGER_API_TOKENS is unset: the read API refuses every request")
	}
	return consumer.Serve(ctx, p, consumer.Service[ledgers.Ledger, ledgers.Instruction]{
		Store: store,
		// The inbox's transactions and postings are traced, each posting of
		// the processor in the trace of the write that recorded its payment.
		Inbox:     ledgertracing.Traced(store, p.TracerProvider),
		Handler:   cfg.handler(ledgerMetrics),
		Mode:      cfg.InboxMode,
		Processor: cfg.processorConfig(),
		API:       api,
	}, listening)
}

// queues opens the SQS client and names the queues of the configuration
// read through getenv, for `ledger dlq redrive`.
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

func reconcile(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	fs := cli.NewFlagSet("ledger reconcile [--payments-database-url URL] [--grace 1m]",
		"Compare the ledger with the payments database; exit status 1 on any divergence.", out)
	paymentsURL := fs.String("payments-database-url", getenv("PAYMENTS_DATABASE_URL"), "the payments database (default $PAYMENTS_DATABASE_URL)")
	grace := fs.Duration("grace", time.Minute, "skip payments and refunds younger than this: their events may still be in flight")
	if err := cli.Parse(fs, args); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	if *paymentsURL == "" {
		return errors.New("PAYMENTS_DATABASE_URL (or --payments-database-url) is required")
	}
	if *grace < 0 {
		return fmt.Errorf("--grace=%s is invalid: want zero or more", *grace)
	}
	cfg, err := loadConfig(getenv, false)
	if err != nil {
		return err
	}
	ledgerPool, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Config{})
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer ledgerPool.Close()
	paymentsPool, err := postgres.Open(ctx, *paymentsURL, postgres.Config{})
	if err != nil {
		return fmt.Errorf("PAYMENTS_DATABASE_URL: %w", err)
	}
	defer paymentsPool.Close()

	rec := ledgers.NewReconciler(ledgerstore.NewPaymentsDB(paymentsPool), ledgerstore.New(ledgerPool), time.Now)
	divs, err := rec.Reconcile(ctx, *grace)
	if err != nil {
		return err
	}
	if err := printDivergences(out, divs); err != nil {
		return err
	}
	if len(divs) > 0 {
		return fmt.Errorf("%w: %d divergences", errDivergence, len(divs))
	}
	return nil
}

// printDivergences prints what reconcile found: a DIVERGENCE line for
// each, or one line saying the ledger matches the payments database.
func printDivergences(out io.Writer, divs []ledgers.Divergence) error {
	for _, d := range divs {
		if _, err := fmt.Fprintln(out, "DIVERGENCE", d); err != nil {
			return err
		}
	}
	if len(divs) == 0 {
		_, err := fmt.Fprintln(out, "ok: the ledger matches the payments database")
		return err
	}
	return nil
}
