package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/opsreport"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/cmd/internal/cli"
)

// runOutbox runs the operator commands on the outbox table:
//
//	payments outbox stats                  pending, dead, oldest pending age, per type
//	payments outbox requeue --id ID        one DEAD row back to PENDING
//	payments outbox requeue --all          every DEAD row back to PENDING
//	payments outbox partitions             the partition count and who holds each
//	payments outbox partitions --set N     change the partition count, online
//
// Requeued rows get a fresh set of attempts and a running relay is notified, so
// they go out at once. They need the database only, not the broker: a relay
// does the publishing. The arguments are read before the configuration, so
// -h needs none.
func runOutbox(ctx context.Context, getenv func(string) string, args []string, out io.Writer) error {
	sub, args, err := cli.Subcommand("outbox", args, "payments outbox stats | requeue --id ID | --all | partitions [--set N]",
		"Inspect the outbox, put DEAD rows back to PENDING, or change its partition count.",
		"stats, requeue --id ID | --all, or partitions [--set N]", out)
	if err != nil {
		return err
	}
	switch sub {
	case "stats":
		fs := cli.NewFlagSet("payments outbox stats", "Print the pending and dead rows and the oldest pending age, in all and per event type.", out)
		if err := cli.Parse(fs, args); err != nil {
			return fmt.Errorf("outbox stats: %w", err)
		}
		store, done, err := openOutbox(ctx, getenv)
		if err != nil {
			return err
		}
		defer done()
		st, err := store.Stats(ctx)
		if err != nil {
			return err
		}
		b, err := store.PartitionBacklog(ctx)
		if err != nil {
			return err
		}
		return opsreport.OutboxStats(out, st, b)
	case "requeue":
		fs := cli.NewFlagSet("payments outbox requeue --id ID | --all",
			"Put DEAD rows back to PENDING with a fresh set of attempts; a running relay publishes them at once.", out)
		id := fs.String("id", "", "requeue the DEAD row with this outbox id")
		all := fs.Bool("all", false, "requeue every DEAD row")
		if err := cli.Parse(fs, args); err != nil {
			return fmt.Errorf("outbox requeue: %w", err)
		}
		if (*id == "") == !*all {
			return errors.New("outbox requeue: want exactly one of --id ID or --all")
		}
		var rowID uuid.UUID
		if *id != "" {
			var err error
			if rowID, err = uuid.Parse(*id); err != nil {
				return fmt.Errorf("outbox requeue: --id %q is not a UUID", *id)
			}
		}
		store, done, err := openOutbox(ctx, getenv)
		if err != nil {
			return err
		}
		defer done()
		if *all {
			n, err := store.RequeueAll(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "requeued %d dead row(s)\n", n)
			return nil
		}
		if err := store.Requeue(ctx, rowID); err != nil {
			return err
		}
		fmt.Fprintf(out, "requeued %s\n", rowID)
		return nil
	case "partitions":
		fs := cli.NewFlagSet("payments outbox partitions [--set N]",
			"Print the partition count and which relay replica holds each partition; with --set, change the count while the service runs (docs/ORDERING.md, \"Changing the partition count\").", out)
		set := fs.Int("set", 0, fmt.Sprintf("the new partition count, 1 to %d", outboxstore.MaxPartitions))
		if err := cli.Parse(fs, args); err != nil {
			return fmt.Errorf("outbox partitions: %w", err)
		}
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == "set" })
		if given && (*set < 1 || *set > outboxstore.MaxPartitions) {
			return fmt.Errorf("outbox partitions: --set %d: want 1 to %d", *set, outboxstore.MaxPartitions)
		}
		store, done, err := openOutbox(ctx, getenv)
		if err != nil {
			return err
		}
		defer done()
		if given {
			return store.SetPartitions(ctx, *set, func(msg string) { fmt.Fprintln(out, msg) })
		}
		n, err := store.Partitions(ctx)
		if err != nil {
			return err
		}
		owners, err := store.Leases(ctx)
		if err != nil {
			return err
		}
		return opsreport.OutboxPartitions(out, n, owners)
	default:
		return fmt.Errorf("outbox: unknown subcommand %q (want stats, requeue or partitions)", sub)
	}
}

func openOutbox(ctx context.Context, getenv func(string) string) (*outboxstore.Store, func(), error) {
	_, pool, err := openDatabase(ctx, getenv)
	if err != nil {
		return nil, nil, err
	}
	return outboxstore.New(pool), pool.Close, nil
}
