package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
)

// runOutbox runs the operator commands on the outbox table (SPEC §8):
//
//	payments outbox stats                  pending, dead, oldest pending age, per type
//	payments outbox requeue --id ID        one DEAD row back to PENDING
//	payments outbox requeue --all          every DEAD row back to PENDING
//
// Requeued rows get a fresh set of attempts and a running relay is notified, so
// they go out at once. They need no broker access: a relay does the publishing.
func runOutbox(ctx context.Context, cfg config, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("outbox: want a subcommand: stats, or requeue --id ID | --all")
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "stats":
		if len(args) > 0 {
			return fmt.Errorf("outbox stats: unexpected arguments %q", args)
		}
		store, done, err := openOutbox(ctx, cfg)
		if err != nil {
			return err
		}
		defer done()
		return outboxStats(ctx, store, out)
	case "requeue":
		fs := flag.NewFlagSet("outbox requeue", flag.ContinueOnError)
		fs.SetOutput(out)
		id := fs.String("id", "", "requeue the DEAD row with this outbox id")
		all := fs.Bool("all", false, "requeue every DEAD row")
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("outbox requeue: %w", err)
		}
		if fs.NArg() > 0 || (*id == "") == !*all {
			return errors.New("outbox requeue: want exactly one of --id ID or --all")
		}
		var rowID uuid.UUID
		if *id != "" {
			var err error
			if rowID, err = uuid.Parse(*id); err != nil {
				return fmt.Errorf("outbox requeue: --id %q is not a UUID", *id)
			}
		}
		store, done, err := openOutbox(ctx, cfg)
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

func openOutbox(ctx context.Context, cfg config) (*outboxstore.Store, func(), error) {
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
