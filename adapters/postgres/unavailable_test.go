package postgres_test

import (
	"context"
	"net"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestIsUnavailable pins what the fault suite found: a connection that broke
// under a statement (a database restart, a network cut) is "unavailable" —
// the API answers 503 with Retry-After — just like a server that refuses
// connections, while a statement the server refused is not.
func TestIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)

	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there any more
		_, err = pgx.Connect(ctx, "postgres://postgres@"+addr+"/postgres?sslmode=disable&connect_timeout=5")
		if err == nil || !postgres.IsUnavailable(err) {
			t.Errorf("IsUnavailable(%v) = false, want true", err)
		}
	})

	for _, tc := range []struct {
		name    string
		breakIt func(*pgx.Conn)
	}{
		{"socket closed under the connection", func(c *pgx.Conn) { _ = c.PgConn().Conn().Close() }},
		{"server terminated the backend", func(c *pgx.Conn) {
			admin, err := pgx.Connect(ctx, dbURL)
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close(ctx)
			if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, c.PgConn().PID()); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := pgx.Connect(ctx, dbURL)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			tc.breakIt(conn)
			_, err = conn.Exec(ctx, `SELECT 1`)
			if err == nil || !postgres.IsUnavailable(err) {
				t.Errorf("IsUnavailable(%v) = false, want true", err)
			}
		})
	}

	t.Run("statement refused", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `SELECT * FROM no_such_table`)
		if err == nil || postgres.IsUnavailable(err) {
			t.Errorf("IsUnavailable(%v) = true, want false", err)
		}
	})
}
