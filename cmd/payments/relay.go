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
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
	"github.com/payments-outbox/payments-outbox/application/outbox/turns"
	"github.com/payments-outbox/payments-outbox/application/provenance"
	"github.com/payments-outbox/payments-outbox/application/retention"
)

const (
	// publishCallsInFlight is how many PublishBatch calls (10 messages each) one
	// relay batch runs at once: a 100-row batch costs one broker round trip.
	publishCallsInFlight = 10
	// relayBatchTimeout bounds one batch's publish and mark, also the in-flight
	// batch a shutdown lets finish. The publish ends a quarter of it before
	// the batch's deadline, leaving that for the mark: the rows the broker
	// acknowledged by then are marked PUBLISHED, the rest
	// retried with backoff, and the next batches are smaller until the
	// broker answers them in time (application/outbox/batchsize.go). Only a
	// mark cut off by it rolls back: its rows stay PENDING and are published
	// again (at least once, never lost).
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
	b, err := sns.OpenBroker(ctx, cfg.AWSRegion, cfg.AWSEndpointURL, cfg.TopicARN, log.With("component", "outbox-relay"), sns.Config{InFlight: publishCallsInFlight})
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
// Unordered (the default), every replica runs the relay of
// application/outbox as it is: the due rows claimed with SELECT … FOR UPDATE
// SKIP LOCKED, with one claim of the replica at work in the database at a
// time (application/outbox/turns), which lets more replicas add up instead of
// getting in each other's way in the database. Ordered
// (OUTBOX_ORDERING=partition), the relay claims through
// application/outbox/partition: each payment's events in write order, from
// the partitions the replica holds leases on.
//
// With tp set, each claimed batch and each row's publish is traced
// (tracing.Relay, tracing.OrderedRelay).
func startRelay(ctx context.Context, g *errgroup.Group, cfg config, pool *pgxpool.Pool, b sns.Broker, log *slog.Logger, reg prometheus.Registerer, tp trace.TracerProvider) error {
	relayMetrics, err := metrics.NewRelay(reg)
	if err != nil {
		return fmt.Errorf("outbox relay metrics: %w", err)
	}
	log = log.With("component", "outbox-relay")
	table := outboxstore.New(pool)
	topic := sns.TopicName(cfg.TopicARN)
	var (
		store   outbox.Store
		ordered *partition.Ordered
	)
	if cfg.OutboxOrdered {
		ordered = partition.NewOrdered(tracing.OrderedRelay(table, tp, topic), log, relayMetrics, partition.Config{
			LeaseDuration: cfg.OutboxLeaseDuration,
			ActiveClaims:  cfg.OutboxActiveClaims,
		})
		store = ordered
		log.InfoContext(ctx, "outbox relay starting, ordered", "owner", ordered.Owner(),
			"lease_duration", cfg.OutboxLeaseDuration, "active_claims", cfg.OutboxActiveClaims, "signing_key_id", cfg.Signer.KeyID())
	} else {
		store = turns.NewLimiter(1).Store(tracing.Relay(table, tp, topic))
		log.InfoContext(ctx, "outbox relay starting", "signing_key_id", cfg.Signer.KeyID())
	}
	// Every event leaves signed: the consumers act only on what this
	// service's key signed (application/provenance).
	r := outbox.NewRelay(store, provenance.NewPublisher(b.Publisher, cfg.Signer), log, relayMetrics, time.Now, outbox.Config{
		BatchSize:      cfg.OutboxBatchSize,
		MaxAttempts:    cfg.OutboxMaxAttempts,
		PollInterval:   cfg.OutboxPollInterval,
		Workers:        outbox.WorkersFor(int(pool.Config().MaxConns)),
		PublishTimeout: relayBatchTimeout,
	})

	g.Go(func() error { return r.Run(ctx) })
	g.Go(func() error { return b.Topic.Run(ctx, topicCheckEvery) })
	g.Go(func() error {
		return retention.Run(ctx, retention.Job{
			Name: "outbox", Delete: table.DeletePublished,
			Retention: cfg.OutboxRetention, Every: outboxCleanupEvery, Batch: outboxCleanupBatch,
		}, time.Now, log)
	})
	g.Go(func() error { return outbox.RefreshGauges(ctx, table, relayMetrics, outboxStatsEvery, log) })
	// The age per partition is ordered mode's signal (a stuck partition);
	// exported in both modes, so that one dashboard reads every deployment.
	g.Go(func() error { return partition.RefreshGauges(ctx, table, relayMetrics, outboxStatsEvery, log) })
	if ordered == nil {
		if cfg.OutboxNotify {
			g.Go(func() error { return outboxstore.Listen(ctx, pool, log, r.Wake) })
		}
		return nil
	}
	g.Go(func() error { return ordered.Run(ctx) })
	if cfg.OutboxNotify {
		g.Go(func() error { return outboxstore.ListenRebalance(ctx, pool, log, r.Wake, ordered.Rebalance) })
	}
	return nil
}
