package main

import (
	"log/slog"
	"time"

	"github.com/payments-outbox/payments-outbox/cmd/internal/envconfig"
)

// config is the ledger service's whole configuration (SPEC §4), read once
// from the environment at start-up. Nothing else reads the environment.
type config struct {
	DatabaseURL    string
	HTTPAddr       string
	AWSRegion      string
	AWSEndpointURL string // empty: real AWS
	LogLevel       slog.Level
	MigrateOnStart bool
	QueueURL       string
	DLQURL         string
	Workers        int
	InboxRetention time.Duration

	ShutdownTimeout time.Duration
	DLQPollInterval time.Duration
}

// loadConfig reads the configuration through getenv. The first bad or missing
// value stops start-up with an error naming the variable. needQueues is false
// for commands that never talk to SQS (migrate, reconcile).
func loadConfig(getenv func(string) string, needQueues bool) (config, error) {
	e := envconfig.New(getenv)
	cfg := config{
		DatabaseURL:     e.Required("DATABASE_URL"),
		HTTPAddr:        e.String("HTTP_ADDR", ":8081"),
		AWSRegion:       e.String("AWS_REGION", "us-east-1"),
		AWSEndpointURL:  e.String("AWS_ENDPOINT_URL", ""),
		LogLevel:        e.Level("LOG_LEVEL", slog.LevelInfo),
		MigrateOnStart:  e.Bool("MIGRATE_ON_START", true),
		Workers:         e.Int("LEDGER_WORKERS", 4, 1, 256),
		InboxRetention:  e.Duration("INBOX_RETENTION", 360*time.Hour),
		ShutdownTimeout: e.Duration("SHUTDOWN_TIMEOUT", 15*time.Second),
		DLQPollInterval: e.Duration("LEDGER_DLQ_POLL_INTERVAL", 30*time.Second),
	}
	if needQueues {
		cfg.QueueURL = e.Required("LEDGER_QUEUE_URL")
		cfg.DLQURL = e.Required("LEDGER_DLQ_URL")
	}
	return cfg, e.Err()
}

// poolSize is the connection pool the consumer needs: one connection per
// worker plus a few for the HTTP API and the background jobs (a URL that sets
// pool_max_conns wins). pgx's default (the number of CPUs, at least 4) would
// make workers queue for connections.
func (c config) poolSize() int { return c.Workers + 4 }
