package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/adapters/ledgermetrics"
	"github.com/payments-outbox/payments-outbox/adapters/metrics"
	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/cmd/internal/cli"
	"github.com/payments-outbox/payments-outbox/cmd/internal/consumer"
	"github.com/payments-outbox/payments-outbox/cmd/internal/inboxcmd"
	"github.com/payments-outbox/payments-outbox/cmd/internal/lifecycle"
)

// runInbox runs the inbox commands:
//
//	ledger inbox process [--once]           the inbox processor alone
//	ledger inbox stats                      pending, oldest pending age, parked, unhandled
//	ledger inbox retry --id ID | --all-parked
//
// They need the database only, not the broker. The arguments are read
// before the configuration, so -h needs none.
func runInbox(ctx context.Context, args []string, getenv func(string) string, out io.Writer, listening chan<- addrs) error {
	sub, args, err := cli.Subcommand("inbox", args, "ledger inbox process [--once] | stats | retry --id ID | --all-parked",
		"Run the inbox processor, inspect the inbox's backlog, or put parked rows back.",
		"process, stats, or retry --id ID | --all-parked", out)
	if err != nil {
		return err
	}
	switch sub {
	case "process":
		fs := cli.NewFlagSet("ledger inbox process [--once]",
			"Run the inbox processor alone until SIGTERM, with health and metrics on OPS_ADDR: the separate process of the async inbox (LEDGER_INBOX_WORKERS claim loops; several such processes share the work).", out)
		once := fs.Bool("once", false, "apply what is due now, then exit (no listener)")
		if err := cli.Parse(fs, args); err != nil {
			return fmt.Errorf("inbox process: %w", err)
		}
		return inboxProcess(ctx, getenv, out, *once, listening)
	case "stats":
		return inboxcmd.Stats(ctx, "ledger", "Print the inbox rows waiting to be applied, the oldest one's age, the parked rows and the rows of types this version does not apply.",
			args, ledgers.AppliedTypes(), openInbox(getenv), out)
	case "retry":
		return inboxcmd.Retry(ctx, "ledger", "Put parked inbox rows back with a fresh set of attempts; a running processor applies them at its next claim.",
			args, openInbox(getenv), out)
	default:
		return fmt.Errorf("inbox: unknown subcommand %q (want process, stats or retry)", sub)
	}
}

// openInbox is openLedger for the inbox commands.
func openInbox(getenv func(string) string) inboxcmd.Open {
	return func(ctx context.Context) (inboxcmd.Store, func(), error) { return openLedger(ctx, getenv) }
}

func openLedger(ctx context.Context, getenv func(string) string) (*ledgerstore.Store, func(), error) {
	cfg, err := loadConfig(getenv, false)
	if err != nil {
		return nil, nil, err
	}
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Config{})
	if err != nil {
		return nil, nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	return ledgerstore.New(pool), pool.Close, nil
}

// inboxProcess is `ledger inbox process`: the processor without the
// consumer or the API.
func inboxProcess(ctx context.Context, getenv func(string) string, out io.Writer, once bool, listening chan<- addrs) error {
	cfg, err := loadConfig(getenv, false)
	if err != nil {
		return err
	}
	if cfg.InboxWorkers == 0 {
		return errors.New("LEDGER_INBOX_WORKERS=0: `ledger inbox process` needs at least one worker")
	}
	log := newLogger(out, cfg.LogLevel)
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Config{DefaultMaxConns: cfg.InboxWorkers + 2})
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer pool.Close()
	if cfg.MigrateOnStart {
		if err := applyMigrations(ctx, pool, log); err != nil {
			return err
		}
	}
	store := ledgerstore.New(pool)
	schemas, err := eventschema.New()
	if err != nil {
		return fmt.Errorf("event schemas: %w", err)
	}
	if once {
		proc := inbox.NewProcessor(store, cfg.handler(nil), schemas, log, nil, time.Now, cfg.processorConfig())
		total, err := proc.Drain(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "inbox process --once: %d row(s) claimed\n", total)
		return nil
	}

	reg := lifecycle.NewRegistry()
	inboxMetrics, err := metrics.NewInbox(reg)
	if err != nil {
		return err
	}
	ledgerMetrics, err := ledgermetrics.New(reg)
	if err != nil {
		return err
	}
	proc := inbox.NewProcessor(store, cfg.handler(ledgerMetrics), schemas, log, inboxMetrics, time.Now, cfg.processorConfig())
	servers, err := lifecycle.ListenOps(cfg.OpsAddr, httpserver.NewOpsRouter(store.Ping, log, httpserver.NewMetrics(reg), httpserver.OpsConfig{Gatherer: reg}), log)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "inbox processor running", "ops_addr", servers.Addrs().Ops, "workers", cfg.InboxWorkers)
	if listening != nil {
		listening <- servers.Addrs()
	}
	g, gctx := errgroup.WithContext(ctx)
	servers.Serve(gctx, g, cfg.ShutdownTimeout, func() {})
	g.Go(func() error { return proc.Run(gctx) })
	g.Go(func() error { return proc.RefreshGauges(gctx, store, consumer.GaugeInterval) })
	return g.Wait()
}
