// Package inboxcmd is the operator's commands every consumer of the events
// has in the same shape — `SERVICE inbox stats`, `SERVICE inbox retry`,
// `SERVICE dlq redrive` — written once: a service names itself, how to open
// its store or its queues, and the words of its help.
package inboxcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/payments-outbox/payments-outbox/adapters/opsreport"
	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/cmd/internal/cli"
)

// Store is what the inbox commands need of a consumer's store
// (inboxstore.Store, under the consumer's own).
type Store interface {
	InboxStats(ctx context.Context, types []string) (inbox.Stats, error)
	Retry(ctx context.Context, ids []string) (int, error)
}

// Open opens a consumer's store from the configuration and returns it with
// the function that closes it.
type Open func(ctx context.Context) (Store, func(), error)

// Stats runs `SERVICE inbox stats`: the rows of types waiting, the oldest
// one's age, the parked rows and the rows of other types. doc is its help.
func Stats(ctx context.Context, service, doc string, args []string, types []string, open Open, out io.Writer) error {
	if err := cli.Parse(cli.NewFlagSet(service+" inbox stats", doc, out), args); err != nil {
		return fmt.Errorf("inbox stats: %w", err)
	}
	store, done, err := open(ctx)
	if err != nil {
		return err
	}
	defer done()
	st, err := store.InboxStats(ctx, types)
	if err != nil {
		return err
	}
	return opsreport.InboxStats(out, st)
}

// Retry runs `SERVICE inbox retry --id ID | --all-parked`: parked rows back
// to pending with a fresh set of attempts. doc is its help.
func Retry(ctx context.Context, service, doc string, args []string, open Open, out io.Writer) error {
	fs := cli.NewFlagSet(service+" inbox retry --id ID [--id ID ...] | --all-parked", doc, out)
	var ids cli.UUIDs
	fs.Var(&ids, "id", "retry the parked row with this message id (repeatable)")
	all := fs.Bool("all-parked", false, "retry every parked row")
	if err := cli.Parse(fs, args); err != nil {
		return fmt.Errorf("inbox retry: %w", err)
	}
	if (len(ids) == 0) == !*all {
		return errors.New("inbox retry: want exactly one of --id ID or --all-parked")
	}
	store, done, err := open(ctx)
	if err != nil {
		return err
	}
	defer done()
	var which []string // nil: every parked row
	if !*all {
		which = ids
	}
	n, err := store.Retry(ctx, which)
	if err != nil {
		return fmt.Errorf("inbox retry: %w", err)
	}
	fmt.Fprintf(out, "%d parked row(s) back to pending\n", n)
	return nil
}

// Queues opens a consumer's SQS client from the configuration and names
// its DLQ and queue.
type Queues func(ctx context.Context) (client sqs.API, dlqURL, queueURL string, err error)

// Redrive runs `SERVICE dlq redrive` (args are what follows `dlq`): the
// DLQ's messages back to the queue, and what moved printed, even when it
// stopped part way. queues is called once the arguments are read.
func Redrive(ctx context.Context, service string, args []string, queues Queues, out io.Writer) error {
	synopsis, doc := service+" dlq redrive", "Move the DLQ's messages back to the queue, once the fault that sent them there is fixed."
	if len(args) == 0 || args[0] != "redrive" {
		if err := cli.NewFlagSet(synopsis, doc, out).Parse(args); err != nil { // -h
			return fmt.Errorf("dlq: %w", err)
		}
		return errors.New("usage: " + synopsis)
	}
	if err := cli.Parse(cli.NewFlagSet(synopsis, doc, out), args[1:]); err != nil {
		return fmt.Errorf("dlq redrive: %w", err)
	}
	client, dlqURL, queueURL, err := queues(ctx)
	if err != nil {
		return err
	}
	rep, err := sqs.Redrive(ctx, client, dlqURL, queueURL, slog.New(slog.DiscardHandler))
	return errors.Join(opsreport.Redrive(out, rep, queueURL), err)
}
