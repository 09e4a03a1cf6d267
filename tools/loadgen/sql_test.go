package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/turns"
	"github.com/payments-outbox/payments-outbox/domain/payment"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// TestRawWriteAndBacklogFitTheSchema runs the SQL loadgen writes past the
// service — the ceiling's batch and the relay backlog's COPY — on tables the
// payments migrations just created, and reads the rows back through the
// service's own packages: the payment through paymentstore, the outbox rows
// through the relay's claim. A migration that changes those tables fails
// here instead of in a benchmark run.
func TestRawWriteAndBacklogFitTheSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t, paymentsmigrations.FS)

	for seq, notify := range []bool{false, true} {
		if err := rawWrite(pool, notify)(ctx, 0, uint64(seq)); err != nil {
			t.Fatalf("ceiling write (notify %v): %v", notify, err)
		}
	}
	var ids []string
	rows, err := pool.Query(ctx, `SELECT id::text FROM payments ORDER BY amount`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 {
		t.Fatalf("the ceiling wrote %d payments, want 2", len(ids))
	}
	repo := paymentstore.New(pool)
	for seq, id := range ids {
		p, err := repo.Get(ctx, payment.ID(id))
		if err != nil {
			t.Fatalf("the service cannot read the ceiling's payment %s: %v", id, err)
		}
		w, err := newWrite(uint64(seq), p.CreatedAt())
		if err != nil {
			t.Fatal(err)
		}
		if want := w.payment; p.Amount().Minor() != want.AmountMinor || p.PayerID() != want.PayerID || p.Status() != payment.StatusCreated {
			t.Errorf("payment %d = %s %s %s, want %d %s %s", seq, p.Amount(), p.PayerID(), p.Status(), want.AmountMinor, want.PayerID, payment.StatusCreated)
		}
	}
	checkClaimed(t, pool, 2, ids)

	const backlog = 5
	if err := fillBacklog(ctx, pool, backlog); err != nil {
		t.Fatalf("fill backlog: %v", err)
	}
	checkClaimed(t, pool, backlog, nil)
}

// checkClaimed claims every PENDING outbox row as a relay does and checks
// that there are n, each a payment.created document under its row's id, about
// one of paymentIDs (about any payment when paymentIDs is nil). The claim
// marks nothing, so the rows stay PENDING.
func checkClaimed(t *testing.T, pool *pgxpool.Pool, n int, paymentIDs []string) {
	t.Helper()
	var msgs []outbox.Message
	_, err := outboxstore.New(pool).Claim(context.Background(), n+1, func(_ context.Context, m []outbox.Message) outbox.Result {
		msgs = m
		return outbox.Result{}
	})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if len(msgs) != n {
		t.Fatalf("claimed %d outbox rows, want %d", len(msgs), n)
	}
	for _, m := range msgs {
		var doc struct {
			ID, Type, Subject string
			Data              struct {
				PaymentID string `json:"payment_id"`
			}
		}
		if err := json.Unmarshal(m.Payload, &doc); err != nil {
			t.Fatalf("outbox row %s: payload is not JSON: %v", m.ID, err)
		}
		if m.Type != payment.TypeCreated || doc.Type != m.Type || doc.ID != m.ID.String() || doc.Subject != doc.Data.PaymentID {
			t.Errorf("outbox row %s of type %s holds %+v", m.ID, m.Type, doc)
		}
		if paymentIDs != nil && !slices.Contains(paymentIDs, doc.Subject) {
			t.Errorf("outbox row %s is about payment %s, not one of %v", m.ID, doc.Subject, paymentIDs)
		}
	}
}

// TestEndToEndQueriesFitTheSchema runs the queries the end-to-end phase reads
// both databases with on freshly migrated ones, as the test above does for
// the writes; that phase needs a broker, so the smoke run leaves it out.
func TestEndToEndQueriesFitTheSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pay, led := pgtest.New(t, paymentsmigrations.FS), pgtest.New(t, ledgermigrations.FS)
	if err := waitLedger(ctx, pay, led, time.Second, io.Discard); err != nil {
		t.Errorf("waitLedger: %v", err)
	}
	if _, err := endToEnd(ctx, pay, led); err != nil {
		t.Errorf("endToEnd: %v", err)
	}
}

// TestTwoPhaseCeilingFitsTheSchema runs the two-phase ceiling's
// transactions, in both of its capture forms, on freshly migrated tables and
// reads the results back through the service's packages: each payment
// captured whole, as POST /payments/{id}/capture leaves it, and its outbox
// holding its payment.authorized then its payment.captured.
func TestTwoPhaseCeilingFitsTheSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t, paymentsmigrations.FS)
	for seq, lockFirst := range []bool{false, true} {
		if err := rawTwoPhase(pool, lockFirst)(ctx, 0, uint64(seq)); err != nil {
			t.Fatalf("two-phase ceiling (lock first %v): %v", lockFirst, err)
		}
	}
	rows, err := pool.Query(ctx, `SELECT id::text FROM payments ORDER BY amount`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(ids) != 2 {
		t.Fatalf("the ceiling wrote payments %v (%v), want 2", ids, err)
	}
	repo := paymentstore.New(pool)
	for _, id := range ids {
		p, err := repo.Get(ctx, payment.ID(id))
		if err != nil {
			t.Fatalf("the service cannot read the ceiling's payment %s: %v", id, err)
		}
		if p.Status() != payment.StatusCaptured || p.CaptureMethod() != payment.CaptureManual || p.CapturedMinor() != p.Amount().Minor() || p.CapturedAt().IsZero() {
			t.Errorf("payment %s: %+v, want manual and captured whole", id, p.Snapshot())
		}
		var types []string
		if err := pool.QueryRow(ctx, `SELECT array_agg(type ORDER BY id) FROM outbox WHERE aggregate_id = $1`, id).Scan(&types); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(types, []string{payment.TypeAuthorized, payment.TypeCaptured}) {
			t.Errorf("payment %s: outbox rows %v, want its authorization then its capture", id, types)
		}
	}
}

// TestDrainCeilingSendsTheRelaysStatements: the drain ceiling is the
// relay's own statements without the relay, so it must send the very
// statements the default relay sends. Both drain one table; Postgres's
// statement statistics (pg_stat_statements, which identifies a statement
// by its parse tree) must then count one claim and one mark, each run by
// both.
func TestDrainCeilingSendsTheRelaysStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t, paymentsmigrations.FS)
	var preload string
	if err := pool.QueryRow(ctx, `SHOW shared_preload_libraries`).Scan(&preload); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(preload, "pg_stat_statements") {
		why := "the Postgres server does not load pg_stat_statements; start it with -c shared_preload_libraries=pg_stat_statements, as .ci/run does"
		if os.Getenv("CI") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	if _, err := pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		t.Fatal(err)
	}

	if err := fillBacklog(ctx, pool, 30); err != nil {
		t.Fatal(err)
	}
	relay := outbox.NewRelay(turns.NewLimiter(1).Store(outboxstore.New(pool)), nullPublisher{}, logtest.Discard(), nil, nil,
		outbox.Config{BatchSize: 10})
	if n, err := relay.Step(ctx); err != nil || n != 10 {
		t.Fatalf("relay step: %d, %v; want a batch of 10", n, err)
	}
	p := newDrainPass(20, 0)
	if err := ceilingLoop(ctx, pool, 10, p); err != nil || p.n.Load() != 20 {
		t.Fatalf("ceiling: %d rows, %v; want the other 20", p.n.Load(), err)
	}

	rows, err := pool.Query(ctx, `
SELECT query, calls FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND (query LIKE '%FOR UPDATE SKIP LOCKED%' OR query LIKE '%status = $_, published_at%')`)
	if err != nil {
		t.Fatal(err)
	}
	type statement struct {
		query string
		calls int64
	}
	ran, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (statement, error) {
		var s statement
		return s, r.Scan(&s.query, &s.calls)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The relay's claim and mark ran once, the ceiling's twice and three
	// times (its last claim finds nothing, and marks nothing).
	if len(ran) != 2 {
		t.Fatalf("claims and marks Postgres counted: %+v; want one claim and one mark, run by the relay and the ceiling alike", ran)
	}
	for _, s := range ran {
		if s.calls < 3 {
			t.Errorf("%q ran %d times; want the relay's and the ceiling's calls under one statement", s.query, s.calls)
		}
	}
}
