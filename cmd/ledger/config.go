package main

import (
	"fmt"
	"math"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/cmd/internal/consumer"
	"github.com/payments-outbox/payments-outbox/cmd/internal/envconfig"
	"github.com/payments-outbox/payments-outbox/cmd/internal/lifecycle"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// config is the ledger service's whole configuration (the table in
// docs/CONFIGURATION.md), read once from the environment at start-up. Nothing
// else reads the environment.
type config struct {
	lifecycle.Common
	QueueURL       string
	DLQURL         string
	Workers        int
	WaitTime       time.Duration // the consumer's long-poll wait
	InboxRetention time.Duration
	// UnhandledRetention is how long a row of a type this version does not
	// apply waits for a version that does, before it is deleted unapplied.
	UnhandledRetention time.Duration

	DLQPollInterval time.Duration

	// InboxMode is sync (apply in the consumer's transaction) or async
	// (record, acknowledge, and let the inbox processor apply).
	InboxMode inbox.Mode
	// InboxWorkers is the inbox processor's claim loops in this process; 0
	// runs none here (the processor then runs as `ledger inbox process`).
	InboxWorkers     int
	InboxBatchSize   int
	InboxMaxAttempts int
	InboxPoll        time.Duration

	// APITokens are the operator tokens the read API accepts
	// (LEDGER_API_TOKENS); only their hashes are kept.
	APITokens access.Tokens

	// MaxAmount is the largest payment, in minor units, the ledger posts
	// or holds (ledgers.Handler.MaxAmount).
	MaxAmount int64

	// Provenance verifies each event's signature before it is recorded:
	// PAYMENTS_PUBLIC_KEYS and PAYMENTS_UNSIGNED_EVENTS.
	Provenance consumer.Provenance
}

// loadConfig reads the configuration through getenv. The first bad or missing
// value stops start-up with an error naming the variable. needQueues is false
// for commands that never talk to SQS (migrate, reconcile).
func loadConfig(getenv func(string) string, needQueues bool) (config, error) {
	e := envconfig.New(getenv)
	cfg := config{
		Common:          lifecycle.ReadCommon(e, getenv, "127.0.0.1:8081", "127.0.0.1:9091"),
		Workers:         e.Int("LEDGER_WORKERS", sqs.DefaultWorkers, 1, 256),
		WaitTime:        e.Duration("LEDGER_WAIT_TIME", 10*time.Second),
		InboxRetention:  e.Duration("INBOX_RETENTION", 360*time.Hour),
		DLQPollInterval: e.Duration("LEDGER_DLQ_POLL_INTERVAL", 30*time.Second),

		InboxWorkers:     e.Int("LEDGER_INBOX_WORKERS", inbox.DefaultWorkers, 0, 64),
		InboxBatchSize:   e.Int("LEDGER_INBOX_BATCH_SIZE", inbox.DefaultBatchSize, 1, 1000),
		InboxMaxAttempts: e.Int("LEDGER_INBOX_MAX_ATTEMPTS", inbox.DefaultMaxAttempts, 1, 1000),
		InboxPoll:        e.Duration("LEDGER_INBOX_POLL_INTERVAL", inbox.DefaultPollInterval),

		MaxAmount: e.Int64("LEDGER_MAX_AMOUNT", ledgers.DefaultMaxAmount, 1, math.MaxInt64),

		// 15 days: the shortest window start-up accepts for a queue that keeps
		// messages as long as SQS allows (14 days) plus
		// inbox.RetentionMargin, and two weeks to deploy a version that
		// applies a type the producer started sending.
		UnhandledRetention: e.Duration("INBOX_UNHANDLED_RETENTION", 360*time.Hour),
	}
	switch mode := e.String("LEDGER_INBOX_MODE", inbox.Sync.String()); mode {
	case inbox.Sync.String():
		cfg.InboxMode = inbox.Sync
	case inbox.Async.String():
		cfg.InboxMode = inbox.Async
	default:
		e.Fail(fmt.Errorf("LEDGER_INBOX_MODE=%q is invalid: want sync (apply each message in the transaction that records it) or async (record and acknowledge; the inbox processor applies)", mode))
	}
	tokens, err := access.NewTokens(getenv("LEDGER_API_TOKENS"))
	if err != nil {
		e.Fail(fmt.Errorf("LEDGER_API_TOKENS: %w", err))
	}
	cfg.APITokens = tokens
	if needQueues {
		cfg.QueueURL = e.Required("LEDGER_QUEUE_URL")
		cfg.DLQURL = e.Required("LEDGER_DLQ_URL")
		cfg.Provenance = consumer.ReadProvenance(e)
		if cfg.WaitTime%time.Second != 0 || cfg.WaitTime > 20*time.Second {
			e.Fail(fmt.Errorf("LEDGER_WAIT_TIME=%s is invalid: want whole seconds from 1s to 20s (SQS long polling)", cfg.WaitTime))
		}
		// A stop lets the receives in flight return rather than abandon them
		// (the broker would still hand them messages, each then hidden and
		// charged a receive), and applies what they return: a shutdown
		// timeout that cannot cover both would release those messages, at
		// the cost of a receive each, on every deploy.
		if need := cfg.WaitTime + sqs.BatchBudget; cfg.ShutdownTimeout < need {
			e.Fail(fmt.Errorf("SHUTDOWN_TIMEOUT=%s is too short for LEDGER_WAIT_TIME=%s: a stop waits for the long polls in flight and applies what they return; want at least %s (LEDGER_WAIT_TIME + %s), or a shorter LEDGER_WAIT_TIME",
				cfg.ShutdownTimeout, cfg.WaitTime, need, sqs.BatchBudget))
		}
	}
	return cfg, e.Err()
}

// startup is what the consumer's start-up reads of the configuration.
func (c config) startup() consumer.Config {
	return consumer.Config{
		Common: c.Common, Name: "ledger", Migrations: ledgermigrations.FS, PoolSize: c.poolSize(),
		QueueURL: c.QueueURL, DLQURL: c.DLQURL, Workers: c.Workers, WaitTime: c.WaitTime, DLQPollInterval: c.DLQPollInterval,
		InboxRetention: c.InboxRetention, UnhandledRetention: c.UnhandledRetention, Provenance: c.Provenance,
	}
}

// handler is the ledger's inbox handler as configured; metrics may be nil.
func (c config) handler(metrics ledgers.HandlerMetrics) ledgers.Handler {
	return ledgers.Handler{Metrics: metrics, MaxAmount: c.MaxAmount}
}

// processorConfig is the inbox processor's tuning.
func (c config) processorConfig() inbox.ProcessorConfig {
	return inbox.ProcessorConfig{
		BatchSize: c.InboxBatchSize, MaxAttempts: c.InboxMaxAttempts, PollInterval: c.InboxPoll, Workers: c.InboxWorkers,
		// A batch in hand at a stop finishes within the stop's budget, or
		// rolls back (its rows stay pending, nothing half done).
		BatchTimeout: c.ShutdownTimeout,
	}
}

// poolSize is the connection pool the consumer needs: one connection per
// worker and per inbox processor worker, plus a few for the HTTP API and the
// background jobs (a URL that sets pool_max_conns wins). pgx's default (the
// number of CPUs, at least 4) would make workers queue for connections.
func (c config) poolSize() int { return c.Workers + c.InboxWorkers + 4 }
