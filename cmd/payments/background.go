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
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/retention"
)

// idempotencyKeyTTL is how long an Idempotency-Key is honoured. Clients are
// promised at least 24 h (docs/RUNBOOK.md); a retry after that creates a new
// payment.
const idempotencyKeyTTL = 48 * time.Hour

// startBackground starts the work that runs beside the API, owned by g and
// stopped by ctx: the outbox relay, the expiry of authorizations and the
// idempotency-key cleanup. Every replica runs each of them.
func startBackground(ctx context.Context, g *errgroup.Group, cfg config, pool *pgxpool.Pool, svc *payments.Service, b broker, log *slog.Logger, reg prometheus.Registerer, tp trace.TracerProvider) error {
	if err := startRelay(ctx, g, cfg, pool, b, log, reg, tp); err != nil {
		return err
	}
	repo := paymentstore.New(pool)
	// The expiry cancels through svc, the API's own write path (decorated
	// as the API's is: the relays are woken and the writes traced), so its
	// payment.canceled events leave through the outbox like any other.
	expiry := payments.NewExpiry(svc, repo.ExpiredAuthorizations, log, payments.ExpiryConfig{Interval: cfg.AuthorizationExpiryInterval})
	g.Go(func() error { return expiry.Run(ctx) })
	g.Go(func() error {
		return retention.Run(ctx, retention.Job{
			Name: "idempotency keys", Delete: repo.DeleteKeysBefore,
			Retention: idempotencyKeyTTL, Every: time.Hour, Batch: 1000,
		}, time.Now, log)
	})
	return nil
}
