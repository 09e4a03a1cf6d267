// Package pgtest gives integration tests a real, freshly migrated Postgres
// database of their own.
//
// The server comes from DATABASE_URL when it is set: CI starts one, and `make
// test` starts one container for the whole run (tools/testrun, with
// StartServer) when Docker is up. Otherwise, for a package tested on its own,
// a testcontainers-go Postgres is started once per test binary when Docker is
// up; otherwise the tests skip, saying why and how to run them. When CI is
// set, a missing server fails the run instead: CI must never go green by
// skipping. Under go test -short they always skip: -short runs the unit tests
// alone (make test-short, make fork-check).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/payments-outbox/payments-outbox/adapters/internal/containertest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres"
)

// Image is the Postgres image a test run starts unless ImageVariable names
// another: the one docker-compose.yml runs (tools/stack keeps them equal).
const Image = "postgres:15.19-alpine@sha256:f7d23353e1b15400d22ebe31189f4d314b87a4c129cc400c8c2d8d4ca127bf81"

// ImageVariable names the environment variable that replaces Image with
// another reference (a full one: name, and tag or digest), for an engine
// that cannot pull Image: one with no registry in reach runs a stand-in.
const ImageVariable = "TESTCONTAINERS_POSTGRES_IMAGE"

var (
	once      sync.Once
	serverURL string
	skipWhy   string
	container testcontainers.Container
)

// Main wraps testing.M.Run for a package whose tests use New: it stops the
// container (if one was started) after the tests. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	if container != nil {
		_ = container.Terminate(context.Background())
	}
	return code
}

// URL returns the admin URL of the test server, starting a container if need be.
// It skips t under -short, and skips (or fails under CI) when no server can be had.
func URL(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		// -short is the unit tests alone: no server, no container, CI or not.
		t.Skip("pgtest: -short: skipping an integration test")
	}
	once.Do(start)
	if serverURL == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("pgtest: CI is set but no Postgres is available: %s", skipWhy)
		}
		t.Skipf("integration test skipped, no Postgres: %s; set DATABASE_URL, or let Docker start one (docs/TESTING.md)", skipWhy)
	}
	return serverURL
}

func start() {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		serverURL = u
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	u, c, err := startContainer(ctx)
	if err != nil {
		skipWhy = "DATABASE_URL is unset, and no Postgres container: " + err.Error()
		fmt.Fprintln(os.Stderr, "pgtest: "+skipWhy)
		return
	}
	container, serverURL = c, u
}

// StartServer starts a Postgres container (of Image, or of the image
// ImageVariable names) and returns its admin URL
// (for DATABASE_URL) and a function that removes it. tools/testrun calls it
// once, so that every package of a run shares one server.
func StartServer(ctx context.Context) (adminURL string, stop func(), err error) {
	u, c, err := startContainer(ctx)
	if err != nil {
		return "", nil, err
	}
	return u, func() { _ = c.Terminate(context.Background()) }, nil
}

func startContainer(ctx context.Context) (adminURL string, c testcontainers.Container, err error) {
	// testcontainers panics rather than erroring when no Docker is found on
	// some code paths; turn that into an error.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	image, err := containertest.Ready(ctx, ImageVariable, Image)
	if err != nil {
		return "", nil, err
	}
	pc, err := tcpostgres.Run(ctx, image,
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.BasicWaitStrategies(),
	)
	if err != nil {
		if pc != nil {
			_ = pc.Terminate(context.Background())
		}
		return "", nil, fmt.Errorf("a container of %s did not start: %w", image, err)
	}
	u, err := pc.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		_ = pc.Terminate(context.Background())
		return "", nil, fmt.Errorf("container connection string: %w", err)
	}
	return u, pc, nil
}

// New creates an empty database owned by this test, applies the migrations in
// fsys and returns a pool on it. The database is dropped when the test ends.
func New(t testing.TB, fsys fs.FS) *pgxpool.Pool {
	t.Helper()
	dbURL := NewDatabase(t)
	ctx := context.Background()
	pool, err := postgres.Open(ctx, dbURL, postgres.Config{})
	if err != nil {
		t.Fatalf("pgtest: open: %v", err)
	}
	t.Cleanup(pool.Close)
	if fsys != nil {
		if _, err := postgres.Migrate(ctx, pool, fsys); err != nil {
			t.Fatalf("pgtest: migrate: %v", err)
		}
	}
	return pool
}

// NewDatabase creates an empty database owned by this test and returns its URL.
// It is dropped when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := URL(t)
	ctx := context.Background()
	name := "t_" + randomHex(8)
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: connect %s: %v", redact(admin), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("pgtest: parse url: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable url>"
	}
	return u.Redacted()
}
