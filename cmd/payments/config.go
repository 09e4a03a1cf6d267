package main

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/sns"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/provenance"
	"github.com/payments-outbox/payments-outbox/cmd/internal/envconfig"
	"github.com/payments-outbox/payments-outbox/cmd/internal/lifecycle"
)

// config is the payments service's whole configuration (docs/CONFIGURATION.md),
// read once from the environment at start-up. Nothing else reads the environment.
type config struct {
	lifecycle.Common
	TopicARN string

	OutboxPollInterval time.Duration
	OutboxBatchSize    int
	OutboxMaxAttempts  int
	OutboxNotify       bool
	OutboxRetention    time.Duration
	// OutboxOrdered is OUTBOX_ORDERING=partition: each payment's events
	// published in the order they were written.
	OutboxOrdered bool
	// OutboxLeaseDuration and OutboxActiveClaims tune ordered mode
	// (partition.Config): how long a partition's lease lasts unrenewed,
	// and how many claim transactions the replicas' relays keep at work in
	// the database at once, at least one each.
	OutboxLeaseDuration time.Duration
	OutboxActiveClaims  int

	// APIRateLimit is the requests per second each API key may make on
	// each replica; 0 turns the limit off.
	APIRateLimit int

	// AuthorizationTTL is how long a manual payment can be captured after
	// it is authorized (its capture_before).
	AuthorizationTTL time.Duration
	// AuthorizationExpiryInterval is the pause between the expiry's sweeps,
	// which cancel the authorizations past their capture_before.
	AuthorizationExpiryInterval time.Duration

	// MaxAmount is the largest amount, in minor units, a payment may be
	// created with.
	MaxAmount int64

	// Signer signs every event the relay publishes (PAYMENTS_SIGNING_KEY_ID,
	// PAYMENTS_SIGNING_KEY), so that the consumers can tell this service's
	// events from anyone else's. Read by serve only: no other command
	// publishes, or should hold the private key.
	Signer *provenance.Signer
}

// loadConfig reads the configuration through getenv. The first bad or missing
// value stops start-up with an error naming the variable. requireTopic is
// false for commands that never publish (migrate, outbox stats).
func loadConfig(getenv func(string) string, requireTopic bool) (config, error) {
	e := envconfig.New(getenv)
	cfg := config{
		Common:             lifecycle.ReadCommon(e, getenv, "127.0.0.1:8080", "127.0.0.1:9090"),
		TopicARN:           e.String("PAYMENTS_TOPIC_ARN", ""),
		OutboxPollInterval: e.Duration("OUTBOX_POLL_INTERVAL", outbox.DefaultPollInterval),
		OutboxBatchSize:    e.Int("OUTBOX_BATCH_SIZE", outbox.DefaultBatchSize, 1, 10_000),
		OutboxMaxAttempts:  e.Int("OUTBOX_MAX_ATTEMPTS", outbox.DefaultMaxAttempts, 1, 1_000),
		OutboxNotify:       e.Bool("OUTBOX_NOTIFY", true),
		OutboxRetention:    e.Duration("OUTBOX_RETENTION", 168*time.Hour),
		APIRateLimit:       e.Int("API_RATE_LIMIT", 100, 0, 1_000_000),

		OutboxLeaseDuration: e.Duration("OUTBOX_LEASE_DURATION", partition.DefaultLeaseDuration),
		OutboxActiveClaims:  e.Int("OUTBOX_ACTIVE_CLAIMS", partition.DefaultActiveClaims, 1, 256),

		AuthorizationTTL:            e.Duration("PAYMENTS_AUTHORIZATION_TTL", payments.DefaultAuthorizationTTL),
		AuthorizationExpiryInterval: e.Duration("PAYMENTS_AUTHORIZATION_EXPIRY_INTERVAL", payments.DefaultExpiryInterval),
		MaxAmount:                   e.Int64("PAYMENTS_MAX_AMOUNT", payments.DefaultMaxAmount, 1, math.MaxInt64),
	}
	if cfg.AuthorizationTTL <= 0 {
		e.Fail(fmt.Errorf("PAYMENTS_AUTHORIZATION_TTL=%s: want a positive duration", cfg.AuthorizationTTL))
	}
	if cfg.AuthorizationExpiryInterval <= 0 {
		e.Fail(fmt.Errorf("PAYMENTS_AUTHORIZATION_EXPIRY_INTERVAL=%s: want a positive duration", cfg.AuthorizationExpiryInterval))
	}
	// Ordered by default when the topic is FIFO: a FIFO topic is asked for
	// order, and unordered publishing would give it up.
	fifo := sns.IsFIFO(cfg.TopicARN)
	switch o := e.String("OUTBOX_ORDERING", ""); o {
	case "":
		cfg.OutboxOrdered = fifo
	case "partition":
		cfg.OutboxOrdered = true
	case "none":
		if fifo {
			e.Fail(errors.New("OUTBOX_ORDERING=none with a FIFO PAYMENTS_TOPIC_ARN: a FIFO topic needs ordered publishing (OUTBOX_ORDERING=partition, or unset)"))
		}
	default:
		e.Fail(fmt.Errorf("OUTBOX_ORDERING=%q: want partition (each payment's events in order) or none", o))
	}
	if cfg.OutboxLeaseDuration < time.Second {
		e.Fail(fmt.Errorf("OUTBOX_LEASE_DURATION=%s: want at least 1s (heartbeats run every third of it)", cfg.OutboxLeaseDuration))
	}
	if requireTopic && cfg.TopicARN == "" {
		e.Fail(errors.New("PAYMENTS_TOPIC_ARN is required (the SNS topic the outbox relay publishes to)"))
	}
	if requireTopic {
		cfg.Signer = readSigner(e)
	}
	return cfg, e.Err()
}

// readSigner reads the relay's signing key. The key's value is never echoed
// in an error: it is the secret.
func readSigner(e *envconfig.Reader) *provenance.Signer {
	id, seed := e.Required("PAYMENTS_SIGNING_KEY_ID"), e.Required("PAYMENTS_SIGNING_KEY")
	if id == "" || seed == "" {
		return nil
	}
	s, err := provenance.NewSigner(id, seed)
	if err != nil {
		e.Fail(fmt.Errorf("PAYMENTS_SIGNING_KEY_ID and PAYMENTS_SIGNING_KEY: %w; `payments signing-key create` makes a key", err))
	}
	return s
}

// defaultPoolSize is the serving pool's size unless DATABASE_URL says
// pool_max_conns. pgx's default follows the number of CPUs, which says nothing
// of this service's needs: each in-flight request holds a connection for its
// write, each relay worker holds one while its batch is at the broker, and the
// LISTEN session and the notifier hold one more each, so a pool sized to the
// CPUs would make requests queue for connections. Idle connections cost
// Postgres little.
const defaultPoolSize = 32
