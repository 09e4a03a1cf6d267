package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

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
	// topicCheckEvery paces the checks of PAYMENTS_TOPIC_ARN after the one
	// at start-up (sns.OpenBroker), which /readyz reports.
	topicCheckEvery = 30 * time.Second
)

// openBroker opens the relay's SNS topic, checked once before anything
// serves: a topic SNS says does not exist stops start-up, a broker that does
// not answer does not (sns.OpenBroker).
func openBroker(ctx context.Context, cfg config, log *slog.Logger) (sns.Broker, error) {
	b, err := sns.OpenBroker(ctx, cfg.AWSRegion, cfg.AWSEndpointURL, cfg.TopicARN, publishCallsInFlight, log.With("component", "outbox-relay"))
	switch {
	case errors.Is(err, sns.ErrTopicNotFound):
		return b, fmt.Errorf("PAYMENTS_TOPIC_ARN: %w; create the topic first (localstack/init-aws.sh does) or correct the ARN", err)
	case err != nil:
		return b, fmt.Errorf("outbox relay: %w", err)
	}
	return b, nil
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
func startRelay(ctx context.Context, g *errgroup.Group, cfg config, pool *pgxpool.Pool, b sns.Broker, log *slog.Logger, reg prometheus.Registerer, tp trace.TracerProvider) error {
	relayMetrics, err := metrics.NewRelay(reg)
	if err != nil {
		return fmt.Errorf("outbox relay metrics: %w", err)
	}
	log = log.With("component", "outbox-relay")
	store := outboxstore.New(pool)
	r := relay.New(tracing.Relay(store, tp, sns.TopicName(cfg.TopicARN)), b.Publisher, log, relayMetrics, time.Now, relay.Config{
		BatchSize:      cfg.OutboxBatchSize,
		MaxAttempts:    cfg.OutboxMaxAttempts,
		PollInterval:   cfg.OutboxPollInterval,
		Workers:        relay.WorkersFor(int(pool.Config().MaxConns)),
		PublishTimeout: relayBatchTimeout,
		Ordered:        cfg.OutboxOrdered,
		LeaseDuration:  cfg.OutboxLeaseDuration,
		ActiveClaims:   cfg.OutboxActiveClaims,
	})
	log.InfoContext(ctx, "outbox relay starting", "owner", r.Owner(), "ordered", cfg.OutboxOrdered,
		"lease_duration", cfg.OutboxLeaseDuration, "active_claims", cfg.OutboxActiveClaims)

	g.Go(func() error { return r.Run(ctx) })
	g.Go(func() error { return b.Topic.Run(ctx, topicCheckEvery) })
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
