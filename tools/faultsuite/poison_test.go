package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
	"github.com/payments-outbox/payments-outbox/application/posting"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// TestPoisonIsPoisonForTheLedger hands the suite's messages to the ledger's
// own use case, on an in-memory store: each poison message must be refused as
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
	svc := posting.NewService(&memTx{}, nil, schemas, time.Now)
	ctx := context.Background()

	if res, err := svc.Apply(ctx, []byte(valid)); err != nil || res.Disposition != posting.Applied {
		t.Fatalf("the unedited event: %v, %v; want applied\n%s", res.Disposition, err, valid)
	}
	for _, body := range poison {
		if _, err := svc.Apply(ctx, []byte(body)); !errors.Is(err, posting.ErrMalformed) && !errors.Is(err, posting.ErrInvalidEvent) {
			t.Errorf("poison applied or retried instead of refused (err %v):\n%s", err, body)
		}
	}
	if res, err := svc.Apply(ctx, []byte(unknown)); err != nil || res.Disposition != posting.Ignored {
		t.Errorf("the unknown type: %v, %v; want ignored\n%s", res.Disposition, err, unknown)
	}
}

// memTx is the ledger's database reduced to what Apply needs: an inbox that
// knows the ids it has seen, and a ledger that accepts every transaction.
type memTx struct{ seen map[string]bool }

func (m *memTx) Transact(_ context.Context, fn func(posting.Repos) error) error {
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	return fn(posting.Repos{Inbox: memInbox{m}, Ledger: memLedger{}})
}

type memInbox struct{ m *memTx }

func (i memInbox) Insert(_ context.Context, msg posting.InboxMessage) (bool, error) {
	if i.m.seen[msg.ID] {
		return false, nil
	}
	i.m.seen[msg.ID] = true
	return true, nil
}

func (memInbox) Annotate(context.Context, string, string) error { return nil }

type memLedger struct{}

func (memLedger) Post(context.Context, ledger.Transaction, time.Time) (bool, error) { return true, nil }
