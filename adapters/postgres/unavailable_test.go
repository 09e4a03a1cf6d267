package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/dependency"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestUnavailable pins what the fault suite found: a connection that broke
// under a statement (a database restart, a network cut) is "unavailable" —
// the API answers 503 with Retry-After — just like a server that refuses
// connections, while a statement the server refused is not.
func TestUnavailable(t *testing.T) {
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
		if err == nil || !errors.Is(postgres.Unavailable(err), dependency.ErrUnavailable) {
			t.Errorf("Unavailable(%v) is not ErrUnavailable, want it to be", err)
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
			if err == nil || !errors.Is(postgres.Unavailable(err), dependency.ErrUnavailable) {
				t.Errorf("Unavailable(%v) is not ErrUnavailable, want it to be", err)
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
		if err == nil || postgres.Unavailable(err) != err {
			t.Errorf("Unavailable(%v) = %v, want the error unchanged", err, postgres.Unavailable(err))
		}
	})
}

// TestUnavailableClassifies pins the rules of the one classifier without a
// server: which of the server's answers mean "retry later", and that the
// classifier passes nil and an error already classified through unchanged.
func TestUnavailableClassifies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		err   error
		retry bool
	}{
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"starting up", &pgconn.PgError{Code: "57P03"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, true},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, true},
		{"a deadline", fmt.Errorf("read payment: %w", context.DeadlineExceeded), true},
		{"a broken socket", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"check violation", &pgconn.PgError{Code: "23514"}, false},
		{"no rows", pgx.ErrNoRows, false},
		{"a cancelled request", context.Canceled, false},
	} {
		got := postgres.Unavailable(tc.err)
		if errors.Is(got, dependency.ErrUnavailable) != tc.retry {
			t.Errorf("%s: Unavailable(%v) = %v, want ErrUnavailable %t", tc.name, tc.err, got, tc.retry)
		}
		if !errors.Is(got, tc.err) {
			t.Errorf("%s: Unavailable(%v) = %v, which no longer wraps the cause", tc.name, tc.err, got)
		}
		if !tc.retry && got != tc.err {
			t.Errorf("%s: Unavailable changed an error it does not classify: %v", tc.name, got)
		}
	}
	if postgres.Unavailable(nil) != nil {
		t.Error("Unavailable(nil) is not nil")
	}
	once := postgres.Unavailable(&pgconn.PgError{Code: "57P01"})
	if twice := postgres.Unavailable(once); twice != once {
		t.Errorf("Unavailable wrapped a classified error again: %v", twice)
	}
}
