package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/metrics"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/sns"
	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/application/relay"
	"github.com/payments-outbox/payments-outbox/application/retention"
)

const (
	// publishCallsInFlight is how many PublishBatch calls (10 messages each) one
	// relay batch runs at once: a 100-row batch costs one broker round trip.
	publishCallsInFlight = 10
	// relayBatchTimeout bounds one batch's publish and mark, also the in-flight
	// batch a shutdown lets finish. A batch cut off by it rolls back: its rows
	// stay PENDING and are published again (at least once, never lost).
	relayBatchTimeout = 10 * time.Second
	// outboxStatsEvery is how often the backlog gauges are refreshed from the
	// table; less often while counting a huge backlog is slow (RefreshGauges).
	outboxStatsEvery = 5 * time.Second
	// outboxCleanupEvery and outboxCleanupBatch pace the deletion of PUBLISHED
	// rows past OUTBOX_RETENTION: small transactions, often enough to keep up.
	outboxCleanupEvery = 10 * time.Minute
	outboxCleanupBatch = 1000
	// topicCheckTimeout bounds the start-up check of PAYMENTS_TOPIC_ARN, and
	// topicCheckEvery paces the checks after it that /readyz reports.
	topicCheckTimeout = 5 * time.Second
	topicCheckEvery   = 30 * time.Second
)

// broker is what the relay publishes with and the watch on its topic.
type broker struct {
	publisher *sns.Publisher
	topic     *sns.TopicWatch
}

// openBroker builds the SNS client and checks PAYMENTS_TOPIC_ARN once, before
// anything serves. A topic SNS says does not exist stops start-up: every event
// would be retried until DEAD while the service looked healthy. A broker that
// does not answer does not stop it: payments keeps taking payments while the
// broker is away (the outbox holds the events), and the watch keeps checking.
func openBroker(ctx context.Context, cfg config, log *slog.Logger) (broker, error) {
	client, err := sns.NewClient(ctx, cfg.AWSRegion, cfg.AWSEndpointURL)
	if err != nil {
		return broker{}, fmt.Errorf("outbox relay: %w", err)
	}
	b := broker{
		publisher: sns.NewPublisher(client, cfg.TopicARN, publishCallsInFlight),
		topic:     sns.NewTopicWatch(client, cfg.TopicARN, log.With("component", "outbox-relay")),
	}
	cctx, cancel := context.WithTimeout(ctx, topicCheckTimeout)
	defer cancel()
	if err := b.topic.Check(cctx); errors.Is(err, sns.ErrTopicNotFound) {
		return broker{}, fmt.Errorf("PAYMENTS_TOPIC_ARN: %w; create the topic first (localstack/init-aws.sh does) or correct the ARN", err)
	}
	return b, nil
}

// status is what /readyz reports of the broker: the last check of the topic.
func (b broker) status() map[string]string {
	return map[string]string{"sns_topic": b.topic.Status()}
}

// startRelay starts the outbox relay beside the API, every goroutine owned by g
// and stopped by ctx: the claim-and-publish workers, the LISTEN loop that wakes
// them (when OUTBOX_NOTIFY is on), the cleanup of old PUBLISHED rows, and the
// refresh of the backlog gauges and the periodic check of the topic that
// /readyz reports. On shutdown a worker lets its in-flight batch
// finish, so every row the broker acknowledged is marked; it never marks a row
// the broker did not acknowledge.
//
// With tp set, each claimed batch and each row's publish is traced
// (tracing.Relay).
func startRelay(ctx context.Context, g *errgroup.Group, cfg config, pool *pgxpool.Pool, b broker, log *slog.Logger, reg prometheus.Registerer, tp trace.TracerProvider) error {
	relayMetrics, err := metrics.NewRelay(reg)
	if err != nil {
		return fmt.Errorf("outbox relay metrics: %w", err)
	}
	log = log.With("component", "outbox-relay")
	store := outboxstore.New(pool)
	r := relay.New(tracing.Relay(store, tp, topicName(cfg.TopicARN)), b.publisher, log, relayMetrics, time.Now, relay.Config{
		BatchSize:      cfg.OutboxBatchSize,
		MaxAttempts:    cfg.OutboxMaxAttempts,
		PollInterval:   cfg.OutboxPollInterval,
		Workers:        relayWorkers(pool),
		PublishTimeout: relayBatchTimeout,
		Ordered:        cfg.OutboxOrdered,
		Owner:          relayOwner(),
		LeaseDuration:  cfg.OutboxLeaseDuration,
		ActiveClaims:   cfg.OutboxActiveClaims,
	})
	log.InfoContext(ctx, "outbox relay starting", "owner", r.Owner(), "ordered", cfg.OutboxOrdered,
		"lease_duration", cfg.OutboxLeaseDuration, "active_claims", cfg.OutboxActiveClaims)

	g.Go(func() error { return r.Run(ctx) })
	g.Go(func() error { return b.topic.Run(ctx, topicCheckEvery) })
	if cfg.OutboxNotify {
		g.Go(func() error { return outboxstore.ListenRebalance(ctx, pool, log, r.Wake, r.Rebalance) })
	}
	g.Go(func() error {
		return retention.Run(ctx, retention.Job{
			Name: "outbox", Delete: store.DeletePublished,
			Retention: cfg.OutboxRetention, Every: outboxCleanupEvery, Batch: outboxCleanupBatch,
		}, time.Now, log)
	})
	g.Go(func() error { return relay.RefreshGauges(ctx, store, relayMetrics, outboxStatsEvery, log) })
	return nil
}

// relayOwner names this replica in the outbox's leases: the host name (a
// container's is its id, a pod's its name), so `payments outbox stats` says
// which replica holds what, and a random suffix, so two processes on one
// host never share leases.
func relayOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "relay"
	}
	return host + "-" + uuid.NewString()[:8]
}

// relayWorkers sizes the relay to the pool it shares with the API: each worker
// holds a connection while its batch is at the broker, so the relay takes at most
// half the pool, and HTTP requests always find a connection during a backlog.
// At most four, the relay's default: the workers are there to keep the broker
// busy while one of them waits on the database, and a few do that.
func relayWorkers(pool *pgxpool.Pool) int {
	return min(4, max(1, int(pool.Config().MaxConns)/2))
}

// topicName is the name part of an SNS topic ARN (arn:aws:sns:region:account:name).
func topicName(arn string) string {
	return arn[strings.LastIndex(arn, ":")+1:]
}
