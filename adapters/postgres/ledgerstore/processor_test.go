package ledgerstore_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/retention"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// ledgerProcessor is the inbox's processor with the ledger's handler.
type ledgerProcessor = inbox.Processor[ledgers.Ledger, ledgers.Instruction]

// newProcessor returns the ledger's processor on b, checking events against
// s (the published schemas when nil). Its handler takes any int64 amount, so
// that the tests can reach the database's balance limits; the amount limit
// is the handler's, tested in application/ledgers and cmd/ledger.
func newProcessor(t testing.TB, b inbox.Backlog[ledgers.Ledger], s inbox.Schemas, cfg inbox.ProcessorConfig) *ledgerProcessor {
	t.Helper()
	if s == nil {
		s = schemas(t)
	}
	return inbox.NewProcessor(b, ledgers.Handler{MaxAmount: math.MaxInt64}, s, logtest.Discard(), nil, time.Now, cfg)
}

// record records each body in async mode, as the consumer does.
func record(t *testing.T, svc books, bodies ...[]byte) {
	t.Helper()
	for _, b := range bodies {
		res, err := svc.Record(context.Background(), b)
		if err != nil {
			t.Fatalf("Record: %v", err)
		}
		if res.Disposition != inbox.Recorded && res.Disposition != inbox.Duplicate {
			t.Fatalf("Record: outcome %s", res.Disposition)
		}
	}
}

// drain steps p until a step claims nothing.
func drain(t *testing.T, p *ledgerProcessor) {
	t.Helper()
	for {
		n, err := p.Step(context.Background())
		if err != nil {
			t.Fatalf("Step: %v", err)
		}
		if n == 0 {
			return
		}
	}
}

type inboxRow struct {
	attempts         int
	processed, park  bool
	errText          string
	nextAttemptIsSet bool
}

func row(t *testing.T, pool *pgxpool.Pool, id string) inboxRow {
	t.Helper()
	var r inboxRow
	err := pool.QueryRow(context.Background(), `
		SELECT attempts, processed_at IS NOT NULL, parked_at IS NOT NULL, coalesce(error, ''), next_attempt_at IS NOT NULL
		FROM inbox_messages WHERE id = $1`, id).Scan(&r.attempts, &r.processed, &r.park, &r.errText, &r.nextAttemptIsSet)
	if err != nil {
		t.Fatalf("inbox row %s: %v", id, err)
	}
	return r
}

// TestRecordAppliesNothingUntilProcessed: the async mode's transaction only
// records, and the processor then posts exactly what the sync mode would
// have; a redelivery before or after processing, in either mode, changes
// nothing.
func TestRecordAppliesNothingUntilProcessed(t *testing.T) {
	t.Parallel()
	svc, store, pool := newService(t)
	p := newPayment(1050, "cus_r", "mer_r")
	record(t, svc, p.body(), p.body())
	if n := count(t, pool, `SELECT count(*) FROM ledger_transactions`); n != 0 {
		t.Fatalf("recorded, not processed: %d ledger transactions, want 0", n)
	}
	if r := row(t, pool, p.id); r.processed || r.park || r.attempts != 0 {
		t.Fatalf("recorded row: got %+v, want pending", r)
	}
	// After a switch back to sync mode, the redelivery of a recorded message
	// is a duplicate: the processor, not the consumer, applies the row.
	if res, err := svc.Apply(context.Background(), p.body()); err != nil || res.Disposition != inbox.Duplicate {
		t.Fatalf("sync redelivery of a recorded message: got %v, %v; want duplicate", res.Disposition, err)
	}
	drain(t, newProcessor(t, store, nil, inbox.ProcessorConfig{}))
	record(t, svc, p.body())
	drain(t, newProcessor(t, store, nil, inbox.ProcessorConfig{}))
	if n := count(t, pool, `SELECT count(*) FROM ledger_transactions`); n != 1 {
		t.Errorf("ledger transactions: got %d, want 1", n)
	}
	if r := row(t, pool, p.id); !r.processed {
		t.Errorf("row after processing: got %+v, want processed", r)
	}
	if b := balance(t, svc, "merchant:mer_r"); b != 1050 {
		t.Errorf("merchant: got %d, want 1050", b)
	}
}

// TestManyProcessorsShareOneBacklog records payments, refunds and the same
// facts republished under new message ids, in shuffled order, and drains them
// with four processors of two workers each: every fact posts exactly once,
// whichever of a payment and its refund comes first, and every row ends
// processed.
func TestManyProcessorsShareOneBacklog(t *testing.T) {
	t.Parallel()
	svc, store, pool := newService(t)
	var bodies [][]byte
	var payments, refunds int
	for i := range 150 {
		p := newPayment(int64(100+i), fmt.Sprintf("cus_%d", i%7), fmt.Sprintf("mer_%d", i%5))
		bodies = append(bodies, p.body())
		payments++
		if i%2 == 0 {
			r := p.refund(40, 40)
			bodies = append(bodies, r.body())
			refunds++
			again := r
			again.id = uuid.NewString() // the same refund, republished under a new id
			bodies = append(bodies, again.body())
		}
	}
	rand.Shuffle(len(bodies), func(i, j int) { bodies[i], bodies[j] = bodies[j], bodies[i] })
	record(t, svc, bodies...)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var g errgroup.Group
	for range 4 {
		proc := newProcessor(t, store, nil, inbox.ProcessorConfig{BatchSize: 10, Workers: 2, PollInterval: 10 * time.Millisecond})
		g.Go(func() error { return proc.Run(ctx) })
	}
	deadline := time.Now().Add(60 * time.Second)
	for count(t, pool, `SELECT count(*) FROM inbox_messages WHERE processed_at IS NULL`) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d rows still unprocessed", count(t, pool, `SELECT count(*) FROM inbox_messages WHERE processed_at IS NULL`))
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, with a deadline
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, pool, `SELECT count(*) FROM ledger_transactions WHERE kind = 'payment'`); n != payments {
		t.Errorf("payments posted: got %d, want %d", n, payments)
	}
	if n := count(t, pool, `SELECT count(*) FROM ledger_transactions WHERE kind = 'refund'`); n != refunds {
		t.Errorf("refunds posted: got %d, want %d", n, refunds)
	}
	if n := count(t, pool, `SELECT count(*) FROM inbox_messages WHERE error LIKE '%business key%'`); n != refunds {
		t.Errorf("republished refunds noted as already posted: got %d, want %d", n, refunds)
	}
	if n := count(t, pool, `SELECT count(*) FROM inbox_messages WHERE parked_at IS NOT NULL`); n != 0 {
		t.Errorf("parked rows: got %d, want 0", n)
	}
}

// refuseAtCommit installs a test-only check, deferred to COMMIT like the
// ledger's balance trigger, that refuses any ledger transaction of amount.
// The savepoint around each row cannot catch it: only the batch's commit
// fails.
func refuseAtCommit(t *testing.T, pool *pgxpool.Pool, amount int64) (drop func()) {
	t.Helper()
	ctx := context.Background()
	for _, sql := range []string{
		fmt.Sprintf(`CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF NEW.amount = %d THEN RAISE EXCEPTION 'test: amount %% refused at commit', NEW.amount USING ERRCODE = 'check_violation'; END IF;
				RETURN NULL;
			END; $$`, amount),
		`CREATE CONSTRAINT TRIGGER test_refuse AFTER INSERT ON ledger_transactions
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_refuse()`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		if _, err := pool.Exec(ctx, `DROP TRIGGER test_refuse ON ledger_transactions; DROP FUNCTION test_refuse()`); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCommitFailureChargesOnlyTheRowAtFault: a row whose writes a deferred
// check refuses fails its whole batch's COMMIT. Without the fallback to one
// row per transaction, the batch would roll back on every claim and the
// rows behind the bad one would never apply. With it, they apply at once,
// the bad row alone gets the error and an attempt, and it is parked after
// MaxAttempts without ever blocking the others. Once the cause is gone, an
// operator's retry applies it.
func TestCommitFailureChargesOnlyTheRowAtFault(t *testing.T) {
	t.Parallel()
	svc, store, pool := newService(t)
	drop := refuseAtCommit(t, pool, 666)
	bad := newPayment(666, "cus_b", "mer_b")
	good := []event{newPayment(100, "cus_b", "mer_b"), newPayment(200, "cus_b", "mer_b"), newPayment(300, "cus_b", "mer_b")}
	record(t, svc, good[0].body(), bad.body(), good[1].body(), good[2].body())
	proc := newProcessor(t, store, nil, inbox.ProcessorConfig{MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})

	if n, err := proc.Step(context.Background()); err != nil || n != 4 {
		t.Fatalf("Step: got %d, %v; want 4 claimed", n, err)
	}
	for _, e := range good {
		if r := row(t, pool, e.id); !r.processed {
			t.Errorf("good row %d behind the bad one: got %+v, want processed", e.amount, r)
		}
	}
	r := row(t, pool, bad.id)
	if r.processed || r.park || r.attempts != 1 || !r.nextAttemptIsSet || !strings.Contains(r.errText, "refused at commit") {
		t.Fatalf("bad row: got %+v, want 1 attempt with the commit's error and a next attempt", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for r = row(t, pool, bad.id); !r.park; r = row(t, pool, bad.id) {
		if time.Now().After(deadline) {
			t.Fatalf("bad row not parked: %+v", r)
		}
		if _, err := proc.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if r.attempts != 3 {
		t.Errorf("parked after %d attempts, want 3", r.attempts)
	}
	st, err := store.InboxStats(context.Background(), ledgers.AppliedTypes())
	if err != nil || st.Parked != 1 || st.Pending != 0 {
		t.Errorf("stats: got %+v, %v; want 1 parked, 0 pending", st, err)
	}

	drop() // the cause is fixed
	if n, err := store.Retry(context.Background(), []string{bad.id}); err != nil || n != 1 {
		t.Fatalf("Retry: got %d, %v", n, err)
	}
	drain(t, proc)
	if r := row(t, pool, bad.id); !r.processed || r.park {
		t.Errorf("after retry: got %+v, want processed", r)
	}
	if n := count(t, pool, `SELECT count(*) FROM ledger_transactions`); n != 4 {
		t.Errorf("ledger transactions: got %d, want 4", n)
	}
}

// TestUnapplicableRowIsParkedAtOnce: a row this version can never apply
// (recorded by an older version that did not know its type, with data the
// schema refuses) is parked on its first attempt, and the rows beside it
// apply.
func TestUnapplicableRowIsParkedAtOnce(t *testing.T) {
	t.Parallel()
	svc, store, pool := newService(t)
	good := newPayment(100, "cus_u", "mer_u")
	record(t, svc, good.body())
	broken := uuid.NewString()
	if _, err := pool.Exec(context.Background(), `INSERT INTO inbox_messages (id, type, payload, received_at) VALUES ($1, 'payment.created', $2, now())`,
		broken, fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","time":"2026-11-29T12:00:00Z","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":"nope"}}`, broken)); err != nil {
		t.Fatal(err)
	}
	drain(t, newProcessor(t, store, nil, inbox.ProcessorConfig{}))
	if r := row(t, pool, broken); !r.park || r.attempts != 1 || !strings.Contains(r.errText, "invalid event") {
		t.Errorf("unapplicable row: got %+v, want parked after 1 attempt with the reason", r)
	}
	if r := row(t, pool, good.id); !r.processed {
		t.Errorf("good row: got %+v, want processed", r)
	}
}

// crashingSchemas stands for the real schemas until its nth check, where the
// processor's process "dies": its context ends and its database connections
// are cut, mid-batch, as a killed process's would be.
type crashingSchemas struct {
	inbox.Schemas
	n     atomic.Int64
	at    int64
	crash func()
}

func (c *crashingSchemas) Validate(typ, version string, event []byte) error {
	if c.n.Add(1) == c.at {
		c.crash()
	}
	return c.Schemas.Validate(typ, version, event)
}

// TestProcessorCrashMidBatch: a processor dies half way through a batch. Its
// transaction never commits, so nothing it applied is kept and every row is
// pending as before, its lock released; the next processor applies each row
// exactly once.
func TestProcessorCrashMidBatch(t *testing.T) {
	t.Parallel()
	svc, store, pool := newService(t)
	var events []event
	for i := range 10 {
		e := newPayment(int64(100+i), "cus_c", "mer_c")
		events = append(events, e)
		record(t, svc, e.body())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dying := &crashingSchemas{Schemas: schemas(t), at: 6, crash: func() {
		cancel()
		if _, err := pool.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
			t.Error(err)
		}
	}}
	if _, err := newProcessor(t, store, dying, inbox.ProcessorConfig{}).Step(ctx); err == nil {
		t.Fatal("Step survived its crash")
	}
	if n := count(t, pool, `SELECT count(*) FROM ledger_transactions`); n != 0 {
		t.Fatalf("after the crash: %d ledger transactions, want 0", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM inbox_messages WHERE processed_at IS NULL AND attempts = 0 AND parked_at IS NULL`); n != len(events) {
		t.Fatalf("after the crash: %d rows pending as before, want %d", n, len(events))
	}
	// pg_terminate_backend only signals: the dead transaction's row locks
	// go when its backend has exited, and until then a claim skips the rows
	// (SKIP LOCKED) as it would any other processor's.
	for deadline := time.Now().Add(30 * time.Second); count(t, pool, `SELECT count(*) FROM (SELECT 1 FROM inbox_messages FOR UPDATE SKIP LOCKED) unlocked`) != len(events); {
		if time.Now().After(deadline) {
			t.Fatal("the killed processor's row locks outlived its backend by 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	drain(t, newProcessor(t, store, nil, inbox.ProcessorConfig{}))
	if n := count(t, pool, `SELECT count(*) FROM ledger_transactions`); n != len(events) {
		t.Errorf("ledger transactions: got %d, want %d, one per message", n, len(events))
	}
}

// TestRetentionKeepsWorkNotDone: retention deletes old processed rows only; a
// pending, parked or unhandled row is never deleted, however old.
func TestRetentionKeepsWorkNotDone(t *testing.T) {
	t.Parallel()
	_, store, pool := newService(t)
	ctx := context.Background()
	old := time.Now().Add(-100 * 24 * time.Hour)
	for _, r := range []struct {
		id, typ   string
		processed bool
		parked    bool
	}{
		{uuid.NewString(), ledgers.TypePaymentCreated, true, false},
		{uuid.NewString(), ledgers.TypePaymentCreated, false, false},
		{uuid.NewString(), ledgers.TypePaymentCreated, false, true},
		{uuid.NewString(), "payment.not_yet_known", false, false},
	} {
		var processed, parked *time.Time
		if r.processed {
			processed = &old
		}
		if r.parked {
			parked = &old
		}
		if _, err := pool.Exec(ctx, `INSERT INTO inbox_messages (id, type, payload, received_at, processed_at, parked_at) VALUES ($1, $2, '{}', $3, $4, $5)`,
			r.id, r.typ, old, processed, parked); err != nil {
			t.Fatal(err)
		}
	}
	n, err := retention.Sweep(ctx, store.DeleteInboxBefore, time.Now().Add(-24*time.Hour), 10)
	if err != nil || n != 1 {
		t.Errorf("Sweep: got %d, %v; want 1 deleted (the processed row)", n, err)
	}
	if left := count(t, pool, `SELECT count(*) FROM inbox_messages WHERE processed_at IS NULL`); left != 3 {
		t.Errorf("unprocessed rows left: got %d, want 3 (pending, parked, unhandled)", left)
	}
}

// TestFailingRowRollsBackAlone: a row whose posting fails at once (here a
// test-only trigger refuses it) rolls back its savepoint only: the batch
// commits with the other rows applied and the bad row charged one attempt,
// its error kept, due again later.
func TestFailingRowRollsBackAlone(t *testing.T) {
	t.Parallel()
	svc, store, pool := newService(t)
	ctx := context.Background()
	for _, sql := range []string{
		`CREATE FUNCTION test_refuse_now() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF NEW.amount = 777 THEN RAISE EXCEPTION 'test: amount 777 refused' USING ERRCODE = 'check_violation'; END IF;
				RETURN NEW;
			END; $$`,
		`CREATE TRIGGER test_refuse_now BEFORE INSERT ON ledger_transactions FOR EACH ROW EXECUTE FUNCTION test_refuse_now()`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	bad, good := newPayment(777, "cus_f", "mer_f"), newPayment(100, "cus_f", "mer_f")
	record(t, svc, bad.body(), good.body())
	if n, err := newProcessor(t, store, nil, inbox.ProcessorConfig{}).Step(ctx); err != nil || n != 2 {
		t.Fatalf("Step: got %d, %v; want 2 claimed", n, err)
	}
	if r := row(t, pool, good.id); !r.processed {
		t.Errorf("good row: got %+v, want processed", r)
	}
	if r := row(t, pool, bad.id); r.processed || r.park || r.attempts != 1 || !r.nextAttemptIsSet || !strings.Contains(r.errText, "amount 777 refused") {
		t.Errorf("bad row: got %+v, want 1 attempt, its error and a next attempt", r)
	}
	if n := count(t, pool, `SELECT count(*) FROM ledger_transactions`); n != 1 {
		t.Errorf("ledger transactions: got %d, want 1", n)
	}
}
