package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// provisionAWS creates a topic, queue, DLQ and subscription of their own for
// this run with the project's script, on AWS_ENDPOINT_URL, and returns the
// KEY=VALUE assignments it prints (PAYMENTS_TOPIC_ARN, LEDGER_QUEUE_URL, …).
func provisionAWS(ctx context.Context, suffix string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "bash", "localstack/init-aws.sh", "--print-env")
	cmd.Env = append(os.Environ(),
		"PAYMENTS_TOPIC_NAME=loadgen-events-"+suffix,
		"LEDGER_QUEUE_NAME=loadgen-ledger-"+suffix,
		"LEDGER_DLQ_NAME=loadgen-ledger-dlq-"+suffix)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("localstack/init-aws.sh: %w", err)
	}
	return parseAssignments(out.String()), nil
}

// parseAssignments keeps the KEY=VALUE lines of a shell snippet, with an
// optional "export " and quotes removed.
func parseAssignments(s string) []string {
	var env []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t#") {
			continue
		}
		env = append(env, k+"="+strings.Trim(v, `'"`))
	}
	return env
}

// waitLedger waits until the ledger has applied as many messages as the
// payments service has outbox rows, printing progress; it is how the run
// knows every event went through, not a sleep that guesses.
func waitLedger(ctx context.Context, payDB, ledgerDB *pgxpool.Pool, timeout time.Duration, progress io.Writer) error {
	var want int
	if err := payDB.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&want); err != nil {
		return err
	}
	start := time.Now()
	last := start
	for {
		var got int
		if err := ledgerDB.QueryRow(ctx, `SELECT count(*) FROM inbox_messages WHERE processed_at IS NOT NULL`).Scan(&got); err != nil {
			return err
		}
		if got >= want {
			return nil
		}
		if time.Since(last) >= time.Second {
			last = time.Now()
			fmt.Fprintf(progress, "  end-to-end: waiting for the ledger, %d/%d events applied\n", got, want)
		}
		if time.Since(start) > timeout {
			return fmt.Errorf("the ledger applied %d of %d events within %s", got, want, timeout)
		}
		sleep(ctx, 100*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// endToEnd returns, per event, the time from the payments transaction (the
// outbox row's created_at: now() of the transaction that committed payment
// and event together) to the ledger's (the inbox row's processed_at, set in
// the transaction that posted the entries). Both clocks are this machine's.
func endToEnd(ctx context.Context, payDB, ledgerDB *pgxpool.Pool) ([]time.Duration, error) {
	created := map[uuid.UUID]time.Time{}
	rows, err := payDB.Query(ctx, `SELECT id, created_at FROM outbox`)
	if err != nil {
		return nil, err
	}
	var (
		id uuid.UUID
		at time.Time
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &at}, func() error { created[id] = at; return nil }); err != nil {
		return nil, err
	}
	rows, err = ledgerDB.Query(ctx, `SELECT id, processed_at FROM inbox_messages WHERE processed_at IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	_, err = pgx.ForEachRow(rows, []any{&id, &at}, func() error {
		if c, ok := created[id]; ok {
			out = append(out, at.Sub(c))
		}
		return nil
	})
	return out, err
}
