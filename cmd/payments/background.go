package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
)

// startBackground starts the work that runs beside the API, owned by g.
func startBackground(ctx context.Context, g *errgroup.Group, cfg config, pool *pgxpool.Pool, log *slog.Logger, reg prometheus.Registerer) error {
	return nil
}

func outboxCommand(ctx context.Context, getenv func(string) string, args []string, out io.Writer) error {
	return fmt.Errorf("outbox commands are not available yet")
}
