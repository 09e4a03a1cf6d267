// Package inboxstore is the inbox in Postgres, for any consumer of the
// events, a file per port: the transaction that writes a message's inbox
// row together with the consumer's own tables, the sync path's SQL
// (inbox.Recorder, record.go); the processor's claims with a savepoint per
// row (inbox.Backlog, backlog.go); the operator's stats and retries and the
// deletions of retention (inbox.Admin, admin.go).
//
// A consumer's store builds on it: it names the repositories its handler
// writes with, bound to a transaction (New's repos), and adds its own
// tables' queries and the mapping of its own commit errors (ledgerstore and
// webhookstore do both for theirs). The table is created by the consumer's
// migrations, each consumer having its database: migrations/ledger for the
// ledger, migrations/webhooks for the webhooks service, and a new consumer's
// migrations create the same table.
package inboxstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/retention"
)

// Tx is what a consumer's repositories write through: the transaction of
// Record, or a savepoint of the processor's claim (both a *postgres.Tx). It
// is valid only inside the function it is handed to.
type Tx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Store is a consumer's inbox in its Postgres database, R being the
// consumer's repositories bound to one transaction.
type Store[R any] struct {
	pool  *pgxpool.Pool
	repos func(Tx) R
}

var (
	_ inbox.Recorder[struct{}] = (*Store[struct{}])(nil)
	_ inbox.Backlog[struct{}]  = (*Store[struct{}])(nil)
	_ inbox.Admin              = (*Store[struct{}])(nil)

	_ retention.DeleteFunc = (*Store[struct{}])(nil).DeleteInboxBefore
)

// New returns the inbox on pool, a pool on a database migrated with the
// inbox table. repos binds the consumer's repositories to a transaction;
// the handler writes with what it returns, inside the transaction of the
// message's inbox row.
func New[R any](pool *pgxpool.Pool, repos func(Tx) R) *Store[R] {
	return &Store[R]{pool: pool, repos: repos}
}
