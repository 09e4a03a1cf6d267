package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/ledgers/ledgerstest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// TestPoisonIsPoisonForTheLedger hands the suite's messages to the ledger's
// own inbox, on its in-memory store: each poison message must be refused as
// never applicable (so the queue dead-letters it), the unknown type must be
// recorded and acknowledged, and the unedited event they start from must
// post, so that each one fails for its edit and for nothing else.
func TestPoisonIsPoisonForTheLedger(t *testing.T) {
	poison, unknown, err := poisonMessages()
	if err != nil {
		t.Fatal(err)
	}
	valid, err := editedEvent(func(map[string]any) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := eventschema.New()
	if err != nil {
		t.Fatal(err)
	}
	store := ledgerstest.NewFakeStore()
	proc := inbox.NewProcessor(store, ledgers.Handler{}, schemas, logtest.Discard(), nil, time.Now, inbox.ProcessorConfig{})
	svc := inbox.NewService(store, proc, time.Now, inbox.Config{})
	ctx := context.Background()

	if res, err := svc.Receive(ctx, []byte(valid)); err != nil || res.Disposition != inbox.Applied {
		t.Fatalf("the unedited event: %v, %v; want applied\n%s", res.Disposition, err, valid)
	}
	for _, body := range poison {
		if _, err := svc.Receive(ctx, []byte(body)); !errors.Is(err, inbox.ErrMalformed) && !errors.Is(err, inbox.ErrInvalidEvent) {
			t.Errorf("poison applied or retried instead of refused (err %v):\n%s", err, body)
		}
	}
	if res, err := svc.Receive(ctx, []byte(unknown)); err != nil || res.Disposition != inbox.Ignored {
		t.Errorf("the unknown type: %v, %v; want ignored\n%s", res.Disposition, err, unknown)
	}
}
