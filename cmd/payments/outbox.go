package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/cmd/internal/cli"
)

// runOutbox runs the operator commands on the outbox table:
//
//	payments outbox stats                  pending, dead, oldest pending age, per type
//	payments outbox requeue --id ID        one DEAD row back to PENDING
//	payments outbox requeue --all          every DEAD row back to PENDING
//
// Requeued rows get a fresh set of attempts and a running relay is notified, so
// they go out at once. They need the database only, not the broker: a relay
// does the publishing. The arguments are read before the configuration, so
// -h needs none.
func runOutbox(ctx context.Context, getenv func(string) string, args []string, out io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fs := cli.NewFlagSet("payments outbox stats | requeue --id ID | --all",
			"Inspect the outbox, or put DEAD rows back to PENDING.", out)
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("outbox: %w", err)
		}
		return errors.New("outbox: want a subcommand: stats, or requeue --id ID | --all")
	}
	sub, args := args[0], args[1:]
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
		return outboxStats(ctx, store, out)
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
	default:
		return fmt.Errorf("outbox: unknown subcommand %q (want stats or requeue)", sub)
	}
}

func openOutbox(ctx context.Context, getenv func(string) string) (*outboxstore.Store, func(), error) {
	cfg, err := loadConfig(getenv, false)
	if err != nil {
		return nil, nil, err
	}
	pool, err := postgres.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, nil, err
	}
	return outboxstore.New(pool), pool.Close, nil
}

func outboxStats(ctx context.Context, store *outboxstore.Store, out io.Writer) error {
	st, err := store.Stats(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "pending\t%d\n", st.Pending)
	fmt.Fprintf(w, "dead\t%d\n", st.Dead)
	fmt.Fprintf(w, "oldest pending age\t%s\n", st.OldestPending.Round(time.Millisecond))
	if len(st.ByType) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "TYPE\tPENDING\tDEAD\tOLDEST PENDING")
		for _, t := range st.ByType {
			fmt.Fprintf(w, "%s\t%d\t%d\t%s\n", t.Type, t.Pending, t.Dead, t.OldestPending.Round(time.Millisecond))
		}
	}
	return w.Flush()
}
