package outboxstore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/outboxtest"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition/partitiontest"
	"github.com/payments-outbox/payments-outbox/application/outbox/turns"
	"github.com/payments-outbox/payments-outbox/application/retention"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// insertRows commits n PENDING outbox rows of type typ in one statement, each
// payload a small CloudEvents document carrying its own id, and returns the ids.
func insertRows(t testing.TB, pool *pgxpool.Pool, n int, typ string) []uuid.UUID {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
INSERT INTO outbox (id, type, aggregate_id, payload)
SELECT id, $2::text, gen_random_uuid(),
       jsonb_build_object('specversion', '1.0', 'id', id, 'type', $2::text, 'source', '/payments',
                          'datacontenttype', 'application/json', 'data', jsonb_build_object('amount', 1050))
FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, $1)) AS s
RETURNING id`, n, typ)
	if err != nil {
		t.Fatalf("insert outbox rows: %v", err)
	}
	ids := make([]uuid.UUID, 0, n)
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

type rowState struct {
	Status      string
	Attempts    int
	LastError   *string
	NextAttempt time.Time
	PublishedAt *time.Time
}

func state(t testing.TB, pool *pgxpool.Pool, id uuid.UUID) rowState {
	t.Helper()
	var s rowState
	err := pool.QueryRow(context.Background(),
		`SELECT status, attempts, last_error, next_attempt_at, published_at FROM outbox WHERE id = $1`, id).
		Scan(&s.Status, &s.Attempts, &s.LastError, &s.NextAttempt, &s.PublishedAt)
	if err != nil {
		t.Fatalf("read row %s: %v", id, err)
	}
	return s
}

func countStatus(t testing.TB, pool *pgxpool.Pool, status string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE status = $1`, status).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFor polls cond until it holds or the deadline passes: tests synchronise on
// state, never on sleeps.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestClaimWritesTheResult(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	store := outboxstore.New(pool)
	ids := insertRows(t, pool, 4, "payment.created")
	ctx := context.Background()
	publishedAt := time.Now().UTC().Truncate(time.Microsecond)
	retryAt := publishedAt.Add(time.Hour)

	var got []outbox.Message
	n, err := store.Claim(ctx, 10, func(_ context.Context, msgs []outbox.Message) outbox.Result {
		got = msgs
		return outbox.Result{
			PublishedAt: publishedAt,
			Published:   []uuid.UUID{ids[0], ids[1]},
			Retry:       []outbox.Failure{{ID: ids[2], Error: "throttled", NextAttemptAt: retryAt}},
			Dead:        []outbox.Failure{{ID: ids[3], Error: "too big"}},
		}
	})
	if err != nil || n != 4 {
		t.Fatalf("Claim: got %d, %v; want 4, nil", n, err)
	}
	for _, m := range got {
		if len(m.Payload) == 0 || m.Type != "payment.created" || m.CreatedAt.IsZero() {
			t.Errorf("claimed message %+v lacks payload, type or created_at", m)
		}
	}

	tests := []struct {
		name     string
		id       uuid.UUID
		status   string
		attempts int
		lastErr  string
	}{
		{name: "acknowledged", id: ids[0], status: "PUBLISHED"},
		{name: "acknowledged too", id: ids[1], status: "PUBLISHED"},
		{name: "retry", id: ids[2], status: "PENDING", attempts: 1, lastErr: "throttled"},
		{name: "dead", id: ids[3], status: "DEAD", attempts: 1, lastErr: "too big"},
	}
	for _, tt := range tests {
		s := state(t, pool, tt.id)
		lastErr := ""
		if s.LastError != nil {
			lastErr = *s.LastError
		}
		if s.Status != tt.status || s.Attempts != tt.attempts || lastErr != tt.lastErr {
			t.Errorf("%s: got %s attempts=%d last_error=%q, want %s attempts=%d last_error=%q",
				tt.name, s.Status, s.Attempts, lastErr, tt.status, tt.attempts, tt.lastErr)
		}
		if tt.status == "PUBLISHED" && (s.PublishedAt == nil || !s.PublishedAt.Equal(publishedAt)) {
			t.Errorf("%s: got published_at %v, want %v", tt.name, s.PublishedAt, publishedAt)
		}
	}
	if s := state(t, pool, ids[2]); !s.NextAttempt.Equal(retryAt) {
		t.Errorf("retry: got next_attempt_at %v, want %v", s.NextAttempt, retryAt)
	}
	// The retry is not due and the others are done: nothing left to claim.
	n, err = store.Claim(ctx, 10, func(context.Context, []outbox.Message) outbox.Result {
		t.Error("publish called with nothing due")
		return outbox.Result{}
	})
	if err != nil || n != 0 {
		t.Errorf("second Claim: got %d, %v; want 0, nil", n, err)
	}
}

// TestEveryClaimReturnsTheStoredBytes: each claim statement — the relay's,
// and ordered mode's of one partition or several — hands the relay the
// payload as the write side stored it, byte for byte: key order, spacing and
// escapes are the encoder's, and a consumer that hashes or signs the
// published event sees them.
func TestEveryClaimReturnsTheStoredBytes(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	store := outboxstore.New(pool)
	const partitions = 64 // the migrations' count
	// The partitioned claims read only partitions whose lease their owner
	// holds: "t" takes them all.
	if _, err := store.Heartbeat(context.Background(), "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	agg := uuid.New()
	id := uuid.New()
	// Not what Postgres would write back if it kept JSON parsed: keys out of
	// order, a duplicate, spacing, escapes that could be written plainly.
	payload := []byte(`{"z":1, "id":"` + id.String() + `","a" : "\u003c\u00fc\u003e","a":2}`)
	if _, err := pool.Exec(context.Background(), `INSERT INTO outbox (id, type, aggregate_id, payload) VALUES ($1, 'payment.created', $2, $3)`,
		id, agg, payload); err != nil {
		t.Fatal(err)
	}
	own := partition.Of(agg, partitions)
	for _, c := range []struct {
		name  string
		owned []int // nil: the relay's claim
	}{
		{"the relay's", nil},
		{"ordered, one partition", []int{own}},
		{"ordered, partitions", []int{(own + 1) % partitions, own, (own + 2) % partitions}},
	} {
		slices.Sort(c.owned)
		var got []outbox.Message
		keep := func(_ context.Context, msgs []outbox.Message) outbox.Result {
			got = msgs
			return outbox.Result{} // nothing recorded: the row stays PENDING for the next claim
		}
		var err error
		if c.owned == nil {
			_, err = store.Claim(context.Background(), 10, keep)
		} else {
			_, err = store.ClaimInOrder(context.Background(), partition.Claim{Limit: 10, Partitions: partitions, Owner: "t", Owned: c.owned}, keep)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got) != 1 || !bytes.Equal(got[0].Payload, payload) {
			var p []string
			for _, m := range got {
				p = append(p, string(m.Payload))
			}
			t.Errorf("%s claim: got payloads %q, want exactly %q", c.name, p, payload)
		}
	}
}

// TestFailedMarkOrCommitLeavesRowsPending makes the statement that marks a
// batch fail, and then the COMMIT after it: either way nothing commits, the
// rows are claimable again, and the pool's connections stay usable — the
// marks and COMMIT share one pipeline, and an error must stop the COMMIT.
func TestFailedMarkOrCommitLeavesRowsPending(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'refused by test'; END $$`); err != nil {
		t.Fatal(err)
	}
	store := outboxstore.New(pool)
	ids := insertRows(t, pool, 3, "payment.created")
	publishAll := func(_ context.Context, msgs []outbox.Message) outbox.Result {
		out := outbox.Result{PublishedAt: time.Now()}
		for _, m := range msgs {
			out.Published = append(out.Published, m.ID)
		}
		return out
	}

	for _, trigger := range []string{
		`CREATE TRIGGER refuse BEFORE UPDATE ON outbox FOR EACH ROW EXECUTE FUNCTION refuse()`,
		`CREATE CONSTRAINT TRIGGER refuse AFTER UPDATE ON outbox DEFERRABLE INITIALLY DEFERRED
		 FOR EACH ROW EXECUTE FUNCTION refuse()`, // fires at COMMIT
	} {
		if _, err := pool.Exec(ctx, trigger); err != nil {
			t.Fatal(err)
		}
		n, err := store.Claim(ctx, 10, publishAll)
		if err == nil {
			t.Fatalf("Claim with %q: got %d, nil; want the error", trigger, n)
		}
		if got := countStatus(t, pool, "PENDING"); got != len(ids) {
			t.Fatalf("after a failed mark: %d rows PENDING, want %d", got, len(ids))
		}
		if _, err := pool.Exec(ctx, `DROP TRIGGER refuse ON outbox`); err != nil {
			t.Fatal(err)
		}
	}

	n, err := store.Claim(ctx, 10, publishAll)
	if err != nil || n != len(ids) {
		t.Fatalf("Claim after the failures: got %d, %v; want %d, nil", n, err, len(ids))
	}
	if got := countStatus(t, pool, "PUBLISHED"); got != len(ids) {
		t.Errorf("%d rows PUBLISHED, want %d", got, len(ids))
	}
	var open int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state LIKE 'idle in transaction%'`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != 0 {
		t.Errorf("%d connections left idle in a transaction", open)
	}
}

// countingPublisher acknowledges everything and counts each message, standing in
// for the broker where only the relay's bookkeeping is under test.
type countingPublisher struct {
	mu    sync.Mutex
	count map[uuid.UUID]int
}

func (p *countingPublisher) Publish(_ context.Context, msgs []outbox.Message) []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.count == nil {
		p.count = map[uuid.UUID]int{}
	}
	for _, m := range msgs {
		p.count[m.ID]++
	}
	return make([]error, len(msgs))
}

// TestManyRelaysPublishEachRowOnce runs four relays, as four replicas would, over
// one table of 5,000 rows, each as cmd/payments runs it by default (one claim
// at work in the database at a time): every row is published, and none twice.
func TestManyRelaysPublishEachRowOnce(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	const rows = 5000
	ids := insertRows(t, pool, rows, "payment.created")
	pub := &countingPublisher{}
	ctx, cancel := context.WithCancel(context.Background())
	var g errgroup.Group
	for range 4 {
		// Each relay has its own Store and pool, like a separate process.
		p, err := pgxpool.New(ctx, pool.Config().ConnString())
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		r := outbox.NewRelay(turns.NewLimiter(1).Store(outboxstore.New(p)), pub, logtest.Discard(), nil, time.Now,
			outbox.Config{BatchSize: 50, Workers: 2, PollInterval: 10 * time.Millisecond})
		g.Go(func() error { return r.Run(ctx) })
	}
	waitFor(t, time.Minute, "all rows PUBLISHED", func() bool { return countStatus(t, pool, "PUBLISHED") == rows })
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	pub.mu.Lock()
	defer pub.mu.Unlock()
	if len(pub.count) != rows {
		t.Errorf("got %d distinct messages published, want %d", len(pub.count), rows)
	}
	for _, id := range ids {
		if c := pub.count[id]; c != 1 {
			t.Errorf("row %s published %d times, want 1", id, c)
		}
	}
}

// blockingPublisher holds the first batch until released, then acknowledges only
// every other message of it.
type blockingPublisher struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	acked   map[uuid.UUID]bool
}

func (p *blockingPublisher) Publish(_ context.Context, msgs []outbox.Message) []error {
	p.once.Do(func() {
		close(p.entered)
		<-p.release
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		if i%2 == 1 {
			errs[i] = errors.New("not acknowledged")
			continue
		}
		p.acked[m.ID] = true
	}
	return errs
}

// TestShutdownMidBatchMarksOnlyAcknowledged stops the relay while its batch is at
// the broker: the relay finishes that batch, and exactly the acknowledged rows are
// PUBLISHED afterwards.
func TestShutdownMidBatchMarksOnlyAcknowledged(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	ids := insertRows(t, pool, 40, "payment.created")
	pub := &blockingPublisher{entered: make(chan struct{}), release: make(chan struct{}), acked: map[uuid.UUID]bool{}}
	r := outbox.NewRelay(outboxstore.New(pool), pub, logtest.Discard(), nil, time.Now,
		outbox.Config{BatchSize: 20, Workers: 1, PollInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	<-pub.entered
	cancel()
	close(pub.release)
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	published := 0
	for _, id := range ids {
		s := state(t, pool, id)
		if (s.Status == "PUBLISHED") != pub.acked[id] {
			t.Errorf("row %s: status %s, acknowledged %v", id, s.Status, pub.acked[id])
		}
		if s.Status == "PUBLISHED" {
			published++
		}
	}
	// One batch of 20, half acknowledged; the relay claimed nothing after the cancel.
	if published != 10 {
		t.Errorf("got %d rows PUBLISHED, want 10", published)
	}
}

// listening reports whether some session of this database waits on LISTEN.
func listenerPID(t testing.TB, pool *pgxpool.Pool) int {
	t.Helper()
	var pid int
	err := pool.QueryRow(context.Background(), `
SELECT COALESCE(max(pid), 0) FROM pg_stat_activity
WHERE datname = current_database() AND query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`).Scan(&pid)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func insertAndNotify(t testing.TB, pool *pgxpool.Pool) uuid.UUID {
	t.Helper()
	tx, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	id := uuid.New()
	if _, err := tx.Exec(context.Background(),
		`INSERT INTO outbox (id, type, aggregate_id, payload) VALUES ($1, 'payment.created', gen_random_uuid(), '{}')`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), `SELECT pg_notify('outbox_pending', '')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestNotifyWakesIdleRelay runs a relay whose poll is a minute away and checks
// that a committed NOTIFY gets the new row published long before that, also
// after the listener's connection was killed.
func TestNotifyWakesIdleRelay(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	pub := &countingPublisher{}
	r := outbox.NewRelay(outboxstore.New(pool), pub, logtest.Discard(), nil, time.Now,
		outbox.Config{BatchSize: 10, Workers: 1, PollInterval: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	var g errgroup.Group
	g.Go(func() error { return r.Run(ctx) })
	g.Go(func() error { return outboxstore.Listen(ctx, pool, logtest.Discard(), r.Wake) })
	defer func() {
		cancel()
		if err := g.Wait(); err != nil {
			t.Error(err)
		}
	}()

	// Well within the one-minute poll: only the notification can explain it.
	const within = 20 * time.Second
	var pid int
	waitFor(t, within, "listener session", func() bool { pid = listenerPID(t, pool); return pid != 0 })
	id := insertAndNotify(t, pool)
	waitFor(t, within, "notified row PUBLISHED", func() bool { return state(t, pool, id).Status == "PUBLISHED" })

	// Kill the listening session; the listener must come back by itself.
	if _, err := pool.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	waitFor(t, within, "listener reconnected", func() bool {
		p := listenerPID(t, pool)
		return p != 0 && p != pid
	})
	id = insertAndNotify(t, pool)
	waitFor(t, within, "row notified after reconnect PUBLISHED", func() bool { return state(t, pool, id).Status == "PUBLISHED" })
}

func TestStatsRequeueAndCleanup(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	store := outboxstore.New(pool)
	ctx := context.Background()

	empty, err := store.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if empty.Pending != 0 || empty.Dead != 0 || empty.OldestPending != 0 || len(empty.ByType) != 0 {
		t.Errorf("empty outbox: got %+v, want zeros", empty)
	}

	created := insertRows(t, pool, 3, "payment.created")
	refunded := insertRows(t, pool, 2, "payment.refunded")
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE outbox SET created_at = now() - interval '1 hour' WHERE id = $1`, created[0])
	exec(`UPDATE outbox SET status = 'DEAD', attempts = 10, last_error = 'too big' WHERE id = $1`, refunded[0])
	exec(`UPDATE outbox SET status = 'PUBLISHED', published_at = now() - interval '8 days' WHERE id = $1`, created[1])
	exec(`UPDATE outbox SET status = 'PUBLISHED', published_at = now() WHERE id = $1`, created[2])

	st, err := store.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 2 || st.Dead != 1 || st.OldestPending < time.Hour || st.OldestPending > 2*time.Hour {
		t.Errorf("got pending=%d dead=%d oldest=%v, want 2, 1, about 1h", st.Pending, st.Dead, st.OldestPending)
	}
	wantTypes := []outbox.TypeStats{{Type: "payment.created", Pending: 1}, {Type: "payment.refunded", Pending: 1, Dead: 1}}
	if len(st.ByType) != len(wantTypes) {
		t.Fatalf("got %d types, want %d: %+v", len(st.ByType), len(wantTypes), st.ByType)
	}
	for i, w := range wantTypes {
		g := st.ByType[i]
		if g.Type != w.Type || g.Pending != w.Pending || g.Dead != w.Dead {
			t.Errorf("type %d: got %+v, want %+v", i, g, w)
		}
	}

	requeueTests := []struct {
		name string
		id   uuid.UUID
		want error
	}{
		{name: "unknown", id: uuid.New(), want: outboxstore.ErrNotFound},
		{name: "pending", id: created[0], want: outboxstore.ErrNotDead},
		{name: "published", id: created[1], want: outboxstore.ErrNotDead},
		{name: "dead", id: refunded[0], want: nil},
		{name: "dead again", id: refunded[0], want: outboxstore.ErrNotDead},
	}
	for _, tt := range requeueTests {
		if err := store.Requeue(ctx, tt.id); !errors.Is(err, tt.want) {
			t.Errorf("Requeue %s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	if s := state(t, pool, refunded[0]); s.Status != "PENDING" || s.Attempts != 0 {
		t.Errorf("requeued row: got %s attempts=%d, want PENDING attempts=0", s.Status, s.Attempts)
	}
	exec(`UPDATE outbox SET status = 'DEAD' WHERE id = ANY($1)`, refunded)
	if n, err := store.RequeueAll(ctx); err != nil || n != 2 {
		t.Errorf("RequeueAll: got %d, %v; want 2, nil", n, err)
	}

	cutoff := time.Now().Add(-7 * 24 * time.Hour)
	if n, err := retention.Sweep(ctx, store.DeletePublished, cutoff, 1); err != nil || n != 1 {
		t.Errorf("Sweep: got %d, %v; want 1, nil", n, err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 4 {
		t.Errorf("after cleanup: got %d rows, want 4 (only the old PUBLISHED row goes)", left)
	}
}

// TestStoreHonoursTheContract runs the relay's Store contract and ordered
// mode's against Postgres, the same suites the in-memory fakes pass.
func TestStoreHonoursTheContract(t *testing.T) {
	t.Parallel()
	state := func(pool *pgxpool.Pool) func(t *testing.T, id uuid.UUID) (string, int) {
		return func(t *testing.T, id uuid.UUID) (string, int) {
			s := state(t, pool, id)
			return s.Status, s.Attempts
		}
	}
	t.Run("relay", func(t *testing.T) {
		t.Parallel()
		outboxtest.RunContract(t, func(t *testing.T) outboxtest.Harness {
			pool := pgtest.New(t, paymentsmigrations.FS)
			return outboxtest.Harness{
				Store: outboxstore.New(pool),
				Insert: func(t *testing.T, n int) []uuid.UUID {
					ids := make([]uuid.UUID, n)
					for i := range ids {
						ids[i] = uuid.New()
						// Due times a microsecond apart, oldest first, all in the past.
						_, err := pool.Exec(context.Background(), `
INSERT INTO outbox (id, type, aggregate_id, payload, next_attempt_at)
VALUES ($1, 'payment.created', gen_random_uuid(), '{}', now() - interval '1 second' + $2 * interval '1 microsecond')`, ids[i], i)
						if err != nil {
							t.Fatal(err)
						}
					}
					return ids
				},
				State: state(pool),
			}
		})
	})
	t.Run("ordered", func(t *testing.T) {
		t.Parallel()
		partitiontest.RunContract(t, func(t *testing.T) partitiontest.Harness {
			pool := pgtest.New(t, paymentsmigrations.FS)
			return partitiontest.Harness{
				Store: outboxstore.New(pool),
				InsertFor: func(t *testing.T, agg uuid.UUID, n int) []uuid.UUID {
					ids := make([]uuid.UUID, n)
					for i := range ids {
						ids[i] = uuid.New()
						_, err := pool.Exec(context.Background(), `
INSERT INTO outbox (id, type, aggregate_id, payload, next_attempt_at)
VALUES ($1, 'payment.created', $2, '{}', now() - interval '1 second')`, ids[i], agg)
						if err != nil {
							t.Fatal(err)
						}
					}
					return ids
				},
				State: state(pool),
			}
		})
	})
}
