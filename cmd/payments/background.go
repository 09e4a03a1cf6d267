package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
)

// idempotencyKeyTTL is how long an Idempotency-Key is honoured. SPEC §5
// promises at least 24 h; a retry after that creates a new payment.
const idempotencyKeyTTL = 48 * time.Hour

// startBackground starts the work that runs beside the API, owned by g and
// stopped by ctx: the outbox relay and the idempotency-key cleanup.
func startBackground(ctx context.Context, g *errgroup.Group, cfg config, pool *pgxpool.Pool, log *slog.Logger, reg prometheus.Registerer) error {
	if err := startRelay(ctx, g, cfg, pool, log, reg); err != nil {
		return err
	}
	repo := paymentstore.New(pool, paymentstore.Options{})
	g.Go(func() error {
		t := time.NewTicker(time.Hour)
		defer t.Stop()
		for {
			n, err := repo.DeleteKeysBefore(ctx, time.Now().Add(-idempotencyKeyTTL), 1000)
			if err != nil && ctx.Err() == nil {
				log.WarnContext(ctx, "idempotency key cleanup failed; will retry", "err", err)
			} else if n > 0 {
				log.InfoContext(ctx, "idempotency keys expired", "deleted", n)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	})
	return nil
}
