package main

import (
	"context"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// applyOne posts one event into the ledger database at url, the way the
// consumer would, for tests that need ledger rows without a broker.
func applyOne(ctx context.Context, url, body string) error {
	pool, err := postgres.Open(ctx, url, postgres.Config{})
	if err != nil {
		return err
	}
	defer pool.Close()
	store := ledgerstore.New(pool)
	schemas, err := eventschema.New()
	if err != nil {
		return err
	}
	proc := inbox.NewProcessor(store, ledgers.Handler{}, schemas, logtest.Discard(), nil, time.Now, inbox.ProcessorConfig{})
	_, err = inbox.NewService(store, proc, time.Now, inbox.Config{}).Receive(ctx, []byte(body))
	return err
}
