package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// articlesClaim is the relay's claim as the pattern states it: the PENDING
// rows, oldest first, locked FOR UPDATE SKIP LOCKED, LIMIT n — with the
// retry's due time in front of the age, so a row waiting for its backoff
// never stands in front of new ones.
const articlesClaim = `
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, true
FROM outbox
WHERE status = 'PENDING' AND next_attempt_at <= now()
ORDER BY next_attempt_at, created_at
LIMIT $1
FOR UPDATE SKIP LOCKED`

// TestTheDefaultRelayRunsTheArticlesClaim reads what the server ran, not
// what the code meant to send: with the default configuration (unordered),
// the payments service publishes a payment's event, and pg_stat_statements
// shows that the one statement that locked outbox rows was the article's
// claim — none by partition — that the acknowledged row was marked
// PUBLISHED, and that no statement of ordered mode's leases ran.
func TestTheDefaultRelayRunsTheArticlesClaim(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	requireStatementStats(t, db)

	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{})
	env := map[string]string{
		"DATABASE_URL":          dbURL,
		"HTTP_ADDR":             "127.0.0.1:0",
		"OPS_ADDR":              "127.0.0.1:0",
		"AWS_ENDPOINT_URL":      awstest.Endpoint(t),
		"AWS_ACCESS_KEY_ID":     "test",
		"AWS_SECRET_ACCESS_KEY": "test",
		"AWS_REGION":            tq.Config.Region,
		"PAYMENTS_TOPIC_ARN":    tq.TopicARN,
	}
	listening := make(chan addrs, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, envOf(env), &logtest.Buffer{}, listening) }()
	var addr addrs
	select {
	case addr = <-listening:
	case err := <-done:
		t.Fatalf("run exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not serving after 30s")
	}
	// From here on: the migrations ran at start-up, and what follows is
	// the service at work. The key is made once; each round resets this
	// database's statistics, creates a payment and reads what ran.
	key := createKey(t, dbURL, "--merchant", "mer_1", "--name", "test")
	for round := 1; ; round++ {
		evicted, err := statementsOfOnePayment(t, ctx, db, addr, key, round)
		if err == nil {
			break
		}
		// A server that ran out of room for statements (pg_stat_statements.max)
		// drops the least used, and a statement that ran once may be among
		// them: evidence lost, not a claim disproved. Another payment shows
		// them again.
		if !evicted || round == 5 {
			t.Fatal(err)
		}
		t.Logf("round %d: %v; pg_stat_statements evicted entries meanwhile, so once more", round, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run after shutdown: %v", err)
	}
}

// statementsOfOnePayment creates one payment through the API and checks
// what the server ran to publish it: the article's claim, one mark, no
// lease. evicted says whether pg_stat_statements dropped entries
// meanwhile, which can hide a statement that ran.
func statementsOfOnePayment(t *testing.T, ctx context.Context, db *pgxpool.Pool, addr addrs, key string, n int) (evicted bool, _ error) {
	t.Helper()
	var dealloc int64
	if err := db.QueryRow(ctx, `SELECT dealloc FROM pg_stat_statements_info`).Scan(&dealloc); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)`); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+addr.API+"/payments",
		strings.NewReader(`{"amount": 1050, "currency": "BRL", "payer_id": "cus_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create: status %d", res.StatusCode)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var published int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE status = 'PUBLISHED'`).Scan(&published); err != nil {
			t.Fatal(err)
		}
		if published == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("payment %d's event not PUBLISHED within a minute", n)
		}
		time.Sleep(50 * time.Millisecond) // polling the table, not synchronising
	}

	type statement struct {
		query       string
		calls, rows int64
	}
	rows, err := db.Query(ctx, `
SELECT query, calls, rows FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND query ~* '^\s*(SELECT|WITH|UPDATE|INSERT|DELETE)'`)
	if err != nil {
		t.Fatal(err)
	}
	ran, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (statement, error) {
		var s statement
		return s, r.Scan(&s.query, &s.calls, &s.rows)
	})
	if err != nil {
		t.Fatal(err)
	}
	var after int64
	if err := db.QueryRow(ctx, `SELECT dealloc FROM pg_stat_statements_info`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	evicted = after > dealloc
	var claims, marks []statement
	for _, s := range ran {
		q := shape(s.query)
		switch {
		case strings.Contains(q, "outbox_leases") || strings.Contains(q, "outbox_relays"):
			// Eviction hides statements; it never invents one.
			t.Fatalf("a statement of ordered mode's leases ran with the default configuration: %s", s.query)
		case strings.Contains(q, " FOR UPDATE") && strings.Contains(q, "FROM outbox"):
			claims = append(claims, s)
		case strings.HasPrefix(q, "UPDATE outbox SET status = ? , published_at"):
			marks = append(marks, s)
		}
	}
	for _, c := range claims {
		if shape(c.query) != shape(articlesClaim) {
			t.Fatalf("a statement other than the article's claim locked outbox rows: %s; want only:\n%s", c.query, articlesClaim)
		}
	}
	if len(claims) != 1 || claims[0].rows < 1 {
		return evicted, fmt.Errorf("statements that locked outbox rows: %+v; want the article's claim, returning the payment's row", claims)
	}
	if len(marks) != 1 || marks[0].rows < 1 {
		return evicted, fmt.Errorf("statements that marked rows PUBLISHED: %+v; want one, that marked the row", marks)
	}
	return evicted, nil
}

// shape is a statement's text with its whitespace collapsed and every
// constant and parameter a ?: what pg_stat_statements shows of a statement
// (constants become $n) and its source agree on.
func shape(q string) string {
	q = regexp.MustCompile(`'[^']*'|\$\d+|\btrue\b`).ReplaceAllString(q, "?")
	q = regexp.MustCompile(`([(),=])`).ReplaceAllString(q, " $1 ")
	return strings.Join(strings.Fields(q), " ")
}

// requireStatementStats makes pg_stat_statements readable in db's database,
// or skips the test when the server does not load it — and fails it under
// CI, which starts its Postgres with it (.ci/run).
func requireStatementStats(t *testing.T, db *pgxpool.Pool) {
	t.Helper()
	var preload string
	if err := db.QueryRow(context.Background(), `SHOW shared_preload_libraries`).Scan(&preload); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(preload, "pg_stat_statements") {
		why := "the Postgres server does not load pg_stat_statements (shared_preload_libraries = " + preload + "); start it with -c shared_preload_libraries=pg_stat_statements, as .ci/run does"
		if os.Getenv("CI") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	if _, err := db.Exec(context.Background(), `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		t.Fatal(err)
	}
}
