package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/apikeystore"
	"github.com/payments-outbox/payments-outbox/application/access"
)

// createDatabase creates a fresh database for one phase on the admin
// server, applies the service's embedded migrations, and returns its URL.
func (b *bench) createDatabase(ctx context.Context, role string, migrations fs.FS) (string, error) {
	name := "loadgen_" + b.suffix + "_" + role
	if _, err := b.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	b.dbs = append(b.dbs, name)
	u, err := url.Parse(b.o.DatabaseURL)
	if err != nil {
		return "", fmt.Errorf("parse -database-url: %w", err)
	}
	u.Path = "/" + name
	pool, err := postgres.Open(ctx, u.String(), postgres.Config{})
	if err != nil {
		return "", err
	}
	defer pool.Close()
	if _, err := postgres.Migrate(ctx, pool, migrations); err != nil {
		return "", err
	}
	return u.String(), nil
}

func (b *bench) dropDatabases() {
	if b.o.Keep {
		for _, name := range b.dbs {
			fmt.Fprintf(b.progress, "loadgen: kept database %s\n", name)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range b.dbs {
		if _, err := b.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(b.progress, "loadgen: drop database %s: %v\n", name, err)
		}
	}
}

// openPool opens a pool of exactly conns connections to url.
func openPool(ctx context.Context, url string, conns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(conns)
	cfg.MinConns = int32(conns)
	return pgxpool.NewWithConfig(ctx, cfg)
}

// truncate empties what a write-path phase fills, so every phase starts
// from the same table sizes.
func truncate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, `TRUNCATE payments, refunds, outbox, idempotency_keys`); err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// withParams adds query parameters ("a=1&b=2") to a database URL.
func withParams(dbURL, params string) string {
	if params == "" {
		return dbURL
	}
	if strings.Contains(dbURL, "?") {
		return dbURL + "&" + params
	}
	return dbURL + "?" + params
}

func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("0102150405") + "_" + hex.EncodeToString(b[:])
}

// describeMachine is the line a reader needs to weigh the figures: cores,
// CPU, Go and Postgres versions and settings (pages: postgresHugePages), and
// that everything shares the cores.
func describeMachine(ctx context.Context, admin *pgxpool.Pool, pages hugePages) string {
	cpu := "unknown CPU"
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(info), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	pg := "Postgres ?"
	var v string
	if err := admin.QueryRow(ctx, `SHOW server_version`).Scan(&v); err == nil {
		pg = "Postgres " + strings.Fields(v)[0]
	}
	var fsync, sync string
	_ = admin.QueryRow(ctx, `SELECT current_setting('fsync'), current_setting('synchronous_commit')`).Scan(&fsync, &sync)
	settings := fmt.Sprintf("fsync=%s, synchronous_commit=%s", fsync, sync)
	if pages.known && pages.on {
		settings += ", huge pages"
	} else if pages.known {
		settings += ", no huge pages"
	}
	return fmt.Sprintf("%d cores (%s) shared by client, servers and database, %s, %s (%s)",
		runtime.NumCPU(), cpu, runtime.Version(), pg, settings)
}

func gitRevision(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	if err := exec.CommandContext(ctx, "git", "diff", "--quiet", "HEAD", "--", ".").Run(); err != nil {
		rev += " (with uncommitted changes)"
	}
	return rev
}

// platformKey issues the platform's API key the load is sent with, through
// the project's own key store: every request is authenticated, as in
// production.
func platformKey(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	key, _, err := access.NewKeys(apikeystore.New(pool), time.Now).Issue(ctx,
		access.Issue{Env: access.EnvTest, Platform: true, Name: "loadgen"})
	if err != nil {
		return "", fmt.Errorf("issue the platform's API key: %w", err)
	}
	return key, nil
}

// noRateLimit lifts the API's rate limit far above any load this tool makes
// with its one key: the limiter still runs on every request, and its cost is
// measured, but it never refuses one.
const noRateLimit = "API_RATE_LIMIT=1000000"
