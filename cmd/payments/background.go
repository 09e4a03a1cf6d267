package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/adapters/sns"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/retention"
)

// startBackground starts the work that runs beside the API, owned by g and
// stopped by ctx: the outbox relay and the idempotency-key cleanup.
func startBackground(ctx context.Context, g *errgroup.Group, cfg config, pool *pgxpool.Pool, b sns.Broker, log *slog.Logger, reg prometheus.Registerer, tp trace.TracerProvider) error {
	if err := startRelay(ctx, g, cfg, pool, b, log, reg, tp); err != nil {
		return err
	}
	repo := paymentstore.New(pool)
	g.Go(func() error {
		return retention.Run(ctx, retention.Job{
			Name: "idempotency keys", Delete: repo.DeleteKeysBefore,
			Retention: payments.KeyTTL, Every: time.Hour, Batch: 1000,
		}, time.Now, log)
	})
	return nil
}
