package ledgerstore_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/dependency"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// TestReadQueriesReportAnOutage pins what lets the ledger API answer a
// database outage 503 with Retry-After, as the payments API does: the read
// queries wrap an unreachable server in dependency.ErrUnavailable, and only
// that — a statement the server refuses stays an ordinary error (500).
func TestReadQueriesReportAnOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	account, err := ledger.MerchantAccount("mer_1")
	if err != nil {
		t.Fatal(err)
	}
	queries := func(t *testing.T, store *ledgerstore.Store) map[string]error {
		t.Helper()
		_, balErr := store.Balances(ctx, account)
		_, txErr := store.PaymentTransactions(ctx, uuid.NewString())
		return map[string]error{"Balances": balErr, "PaymentTransactions": txErr}
	}

	t.Run("server unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there any more
		pool, err := pgxpool.New(ctx, "postgres://postgres@"+addr+"/ledger?sslmode=disable&connect_timeout=5")
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		for name, err := range queries(t, ledgerstore.New(pool)) {
			if !errors.Is(err, dependency.ErrUnavailable) {
				t.Errorf("%s: got %v, want dependency.ErrUnavailable", name, err)
			}
		}
	})

	t.Run("statement refused", func(t *testing.T) {
		// A database without the ledger's tables: the server answers, and
		// refuses the query.
		pool, err := pgxpool.New(ctx, pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		for name, err := range queries(t, ledgerstore.New(pool)) {
			if err == nil || errors.Is(err, dependency.ErrUnavailable) {
				t.Errorf("%s: got %v, want an error that is not dependency.ErrUnavailable", name, err)
			}
		}
	})
}
