package main

import (
	"encoding/base64"
	"fmt"
	"math"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
	"github.com/payments-outbox/payments-outbox/cmd/internal/consumer"
	"github.com/payments-outbox/payments-outbox/cmd/internal/envconfig"
	"github.com/payments-outbox/payments-outbox/cmd/internal/lifecycle"
	webhooksmigrations "github.com/payments-outbox/payments-outbox/migrations/webhooks"
)

// config is the webhooks service's whole configuration (the table in
// docs/CONFIGURATION.md), read once from the environment at start-up.
type config struct {
	lifecycle.Common
	QueueURL string
	DLQURL   string
	// APIRateLimit is the requests per second each API key may make on
	// this replica's merchant API (0: no limit).
	APIRateLimit int
	// PaymentsURL is the payments API the merchant API asks who a key is.
	PaymentsURL string
	// SecretsKey seals the endpoints' signing secrets (AES-256-GCM).
	SecretsKey []byte

	Schedule            *webhooks.Schedule
	AttemptTimeout      time.Duration
	EndpointConcurrency int
	MerchantConcurrency int
	MaxEndpoints        int
	MaxAmount           int64
	DeliveryWorkers     int
	DisableAfter        time.Duration
	SecretGrace         time.Duration
	AllowPrivateTargets bool

	Workers  int
	WaitTime time.Duration

	InboxWorkers       int
	InboxBatchSize     int
	InboxMaxAttempts   int
	InboxPoll          time.Duration
	InboxRetention     time.Duration
	UnhandledRetention time.Duration

	DLQPollInterval time.Duration

	// Provenance verifies each event's signature before it is recorded:
	// PAYMENTS_PUBLIC_KEYS and PAYMENTS_UNSIGNED_EVENTS.
	Provenance consumer.Provenance
}

// loadConfig reads the configuration through getenv; the first bad or
// missing value stops start-up with an error naming the variable.
// needQueues is false for the commands that need the database alone.
func loadConfig(getenv func(string) string, needQueues bool) (config, error) {
	e := envconfig.New(getenv)
	cfg := config{
		Common:              lifecycle.ReadCommon(e, getenv, "127.0.0.1:8082", "127.0.0.1:9092"),
		AttemptTimeout:      e.Duration("WEBHOOKS_ATTEMPT_TIMEOUT", webhooks.DefaultAttemptTimeout),
		EndpointConcurrency: e.Int("WEBHOOKS_ENDPOINT_CONCURRENCY", webhooks.DefaultPerEndpoint, 1, 256),
		MerchantConcurrency: e.Int("WEBHOOKS_MERCHANT_CONCURRENCY", webhooks.DefaultPerMerchant, 1, 1024),
		MaxEndpoints:        e.Int("WEBHOOKS_MAX_ENDPOINTS", webhooks.DefaultMaxEndpoints, 1, 10_000),
		MaxAmount:           e.Int64("WEBHOOKS_MAX_AMOUNT", webhooks.DefaultMaxAmount, 1, math.MaxInt64),
		DeliveryWorkers:     e.Int("WEBHOOKS_DELIVERY_WORKERS", webhooks.DefaultDeliveryWorkers, 1, 1024),
		DisableAfter:        e.Duration("WEBHOOKS_DISABLE_AFTER", webhooks.DefaultDisableAfter),
		SecretGrace:         e.Duration("WEBHOOKS_SECRET_GRACE", webhooks.DefaultSecretGrace),
		AllowPrivateTargets: e.Bool("WEBHOOKS_ALLOW_PRIVATE_TARGETS", false),
		APIRateLimit:        e.Int("API_RATE_LIMIT", 100, 0, 1_000_000),
		Workers:             e.Int("WEBHOOKS_WORKERS", 2, 1, 256),
		WaitTime:            e.Duration("WEBHOOKS_WAIT_TIME", 10*time.Second),
		InboxWorkers:        e.Int("WEBHOOKS_INBOX_WORKERS", inbox.DefaultWorkers, 1, 64),
		InboxBatchSize:      e.Int("WEBHOOKS_INBOX_BATCH_SIZE", inbox.DefaultBatchSize, 1, 1000),
		InboxMaxAttempts:    e.Int("WEBHOOKS_INBOX_MAX_ATTEMPTS", inbox.DefaultMaxAttempts, 1, 1000),
		InboxPoll:           e.Duration("WEBHOOKS_INBOX_POLL_INTERVAL", inbox.DefaultPollInterval),
		InboxRetention:      e.Duration("INBOX_RETENTION", 360*time.Hour),
		UnhandledRetention:  e.Duration("INBOX_UNHANDLED_RETENTION", 360*time.Hour),
		DLQPollInterval:     30 * time.Second,
	}
	sched, err := webhooks.ParseSchedule(e.String("WEBHOOKS_RETRY_SCHEDULE", webhooks.DefaultRetrySchedule))
	if err != nil {
		e.Fail(fmt.Errorf("WEBHOOKS_RETRY_SCHEDULE: %w", err))
	}
	cfg.Schedule = sched
	if cfg.SecretGrace > webhooks.MaxSecretGrace {
		e.Fail(fmt.Errorf("WEBHOOKS_SECRET_GRACE=%s is invalid: want at most %s", cfg.SecretGrace, webhooks.MaxSecretGrace))
	}
	if needQueues {
		cfg.QueueURL = e.Required("WEBHOOKS_QUEUE_URL")
		cfg.DLQURL = e.Required("WEBHOOKS_DLQ_URL")
		cfg.Provenance = consumer.ReadProvenance(e)
		cfg.PaymentsURL = e.Required("WEBHOOKS_PAYMENTS_URL")
		if key := e.Required("WEBHOOKS_SECRETS_KEY"); key != "" {
			// The value is never echoed: it is the key.
			b, err := base64.StdEncoding.DecodeString(key)
			if err != nil || len(b) != 32 {
				e.Fail(fmt.Errorf("WEBHOOKS_SECRETS_KEY is invalid: want the base64 of 32 random bytes (openssl rand -base64 32)"))
			}
			cfg.SecretsKey = b
		}
		if cfg.WaitTime%time.Second != 0 || cfg.WaitTime > 20*time.Second {
			e.Fail(fmt.Errorf("WEBHOOKS_WAIT_TIME=%s is invalid: want whole seconds from 1s to 20s (SQS long polling)", cfg.WaitTime))
		}
		if need := cfg.WaitTime + sqs.BatchBudget; cfg.ShutdownTimeout < need {
			e.Fail(fmt.Errorf("SHUTDOWN_TIMEOUT=%s is too short for WEBHOOKS_WAIT_TIME=%s: a stop waits for the long polls in flight and records what they return; want at least %s (WEBHOOKS_WAIT_TIME + %s), or a shorter WEBHOOKS_WAIT_TIME",
				cfg.ShutdownTimeout, cfg.WaitTime, need, sqs.BatchBudget))
		}
	}
	return cfg, e.Err()
}

// startup is what the consumer's start-up reads of the configuration.
func (c config) startup() consumer.Config {
	return consumer.Config{
		Common: c.Common, Name: "webhooks", Migrations: webhooksmigrations.FS, PoolSize: c.poolSize(),
		QueueURL: c.QueueURL, DLQURL: c.DLQURL, Workers: c.Workers, WaitTime: c.WaitTime, DLQPollInterval: c.DLQPollInterval,
		InboxRetention: c.InboxRetention, UnhandledRetention: c.UnhandledRetention, Provenance: c.Provenance,
	}
}

// processorConfig is the inbox processor's tuning: the fan-out's. Each
// event it fans out wakes a delivery worker, once the batch committed: its
// deliveries are visible then, not before.
func (c config) processorConfig(worker *webhooks.Worker) inbox.ProcessorConfig {
	return inbox.ProcessorConfig{
		BatchSize: c.InboxBatchSize, MaxAttempts: c.InboxMaxAttempts, PollInterval: c.InboxPoll, Workers: c.InboxWorkers,
		BatchTimeout: c.ShutdownTimeout, OnApplied: worker.Wake,
	}
}

// workerConfig is the delivery workers' tuning.
func (c config) workerConfig() webhooks.WorkerConfig {
	return webhooks.WorkerConfig{
		Workers: c.DeliveryWorkers, PerEndpoint: c.EndpointConcurrency, PerMerchant: c.MerchantConcurrency, AttemptTimeout: c.AttemptTimeout,
		DisableAfter: c.DisableAfter, StopGrace: c.ShutdownTimeout,
	}
}

// poolSize: a connection per consumer loop, inbox worker and delivery
// worker (each holds one only to claim and to record, not while it sends),
// plus a few for the API and the background jobs.
func (c config) poolSize() int { return c.Workers + c.InboxWorkers + c.DeliveryWorkers/2 + 4 }

// serviceConfig is the merchant API's use cases' tuning.
func (c config) serviceConfig() webhooks.Config {
	return webhooks.Config{SecretGrace: c.SecretGrace, AllowPrivateTargets: c.AllowPrivateTargets, MaxEndpoints: c.MaxEndpoints}
}
