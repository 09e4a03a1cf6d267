// Package postgres holds what every service's Postgres adapters share: opening a
// pgx pool, applying embedded goose migrations, the one classifier from a
// driver's error to the ports' (Unavailable), and the one transaction every
// store runs its writes in (Transact). The stores themselves live in one
// sub-package per table set (paymentstore, outboxstore, apikeystore,
// inboxstore, ledgerstore, webhookstore).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// Config tunes Open. The zero value is pgx's pool, untraced.
type Config struct {
	// DefaultMaxConns sizes the pool to that many connections unless the URL
	// sets pool_max_conns itself. pgx's own default (the number of CPUs, at
	// least 4) suits no service: each in-flight request, relay worker
	// or consumer worker holds a connection for its transaction.
	DefaultMaxConns int
	// TracerProvider, when set, traces the pool's statements, batches and
	// connection waits (otelpgx), as children of the span in each call's
	// context: pgx's own hook, the decorator at the driver's boundary. A
	// statement sent outside any span (a poll, a retention sweep) records
	// nothing: only work already in a trace is detailed.
	TracerProvider trace.TracerProvider
}

// Open connects a pool to url and checks that the server answers.
func Open(ctx context.Context, url string, o Config) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if o.DefaultMaxConns > 0 && !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = int32(o.DefaultMaxConns)
	}
	if o.TracerProvider != nil {
		cfg.ConnConfig.Tracer = otelpgx.NewTracer(
			otelpgx.WithTracerProvider(o.TracerProvider),
			otelpgx.WithMeterProvider(noopmetric.NewMeterProvider()), // the services' metrics are Prometheus's
		)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping postgres: %w", err)
	}
	return pool, nil
}

// Migrate applies every pending goose migration in fsys. It takes a Postgres
// session-level advisory lock first, so several replicas starting at once
// migrate one after another instead of racing each other.
func Migrate(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS) ([]*goose.MigrationResult, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithSessionLocker(locker))
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	res, err := provider.Up(ctx)
	if err != nil {
		return res, fmt.Errorf("apply migrations: %w", err)
	}
	return res, nil
}

// IsUniqueViolation reports whether err is a unique-constraint violation,
// optionally of the named constraint only.
func IsUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		return false
	}
	return constraint == "" || pgErr.ConstraintName == constraint
}
