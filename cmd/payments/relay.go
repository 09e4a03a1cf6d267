package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/metrics"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/sns"
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
)

// startRelay starts the outbox relay beside the API, every goroutine owned by g
// and stopped by ctx: the claim-and-publish workers, the LISTEN loop that wakes
// them (when OUTBOX_NOTIFY is on), the cleanup of old PUBLISHED rows, and the
// refresh of the backlog gauges. On shutdown a worker lets its in-flight batch
// finish, so every row the broker acknowledged is marked; it never marks a row
// the broker did not acknowledge.
func startRelay(ctx context.Context, g *errgroup.Group, cfg config, pool *pgxpool.Pool, log *slog.Logger, reg prometheus.Registerer) error {
	client, err := sns.NewClient(ctx, cfg.AWSRegion, cfg.AWSEndpointURL)
	if err != nil {
		return fmt.Errorf("outbox relay: %w", err)
	}
	relayMetrics, err := metrics.NewRelay(reg)
	if err != nil {
		return fmt.Errorf("outbox relay metrics: %w", err)
	}
	log = log.With("component", "outbox-relay")
	store := outboxstore.New(pool)
	r := relay.New(relay.Config{
		BatchSize:      cfg.OutboxBatchSize,
		MaxAttempts:    cfg.OutboxMaxAttempts,
		PollInterval:   cfg.OutboxPollInterval,
		Workers:        relayWorkers(pool),
		PublishTimeout: relayBatchTimeout,
	}, store, sns.NewPublisher(client, cfg.TopicARN, publishCallsInFlight), log, relayMetrics, time.Now)

	g.Go(func() error { return r.Run(ctx) })
	if cfg.OutboxNotify {
		g.Go(func() error { return outboxstore.Listen(ctx, pool, log, r.Wake) })
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

// relayWorkers sizes the relay to the pool it shares with the API: each worker
// holds a connection while its batch is at the broker, so the relay takes at most
// half the pool (and at most 4 workers, past which docs/BENCHMARKS.md shows no
// gain), and HTTP requests always find a connection during a backlog.
func relayWorkers(pool *pgxpool.Pool) int {
	return min(4, max(1, int(pool.Config().MaxConns)/2))
}
