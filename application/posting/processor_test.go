package posting_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/posting"
	"github.com/payments-outbox/payments-outbox/application/posting/postingtest"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func step(t *testing.T, p *posting.Processor) int {
	t.Helper()
	n, err := p.Step(context.Background())
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	return n
}

type countingMetrics struct {
	posted, already, retried, parked int
	backlog                          posting.InboxStats
}

func (c *countingMetrics) Processed(posted bool, _ time.Duration) {
	if posted {
		c.posted++
	} else {
		c.already++
	}
}

func (c *countingMetrics) Failed(parked bool) {
	if parked {
		c.parked++
	} else {
		c.retried++
	}
}

func (c *countingMetrics) Backlog(s posting.InboxStats) { c.backlog = s }

// TestRecordChecksLikeApply: the async mode refuses what the sync mode
// refuses, before writing anything, so such a message still reaches the DLQ;
// a valid one is recorded pending, and its redelivery is a duplicate.
func TestRecordChecksLikeApply(t *testing.T) {
	m := postingtest.NewFakeStore()
	refusing := posting.NewService(m, m, &postingtest.FakeSchemas{Refuse: errors.New("amount: must be > 0")}, func() time.Time { return now })
	if _, err := refusing.Record(context.Background(), created(msgA, 100)); !errors.Is(err, posting.ErrInvalidEvent) {
		t.Errorf("schema refuses: got %v, want ErrInvalidEvent", err)
	}
	svc := newService(m)
	if _, err := svc.Record(context.Background(), []byte(`{"specversion":"1.0"}`)); !errors.Is(err, posting.ErrMalformed) {
		t.Errorf("no id: got %v, want ErrMalformed", err)
	}
	if len(m.Inbox()) != 0 {
		t.Fatalf("refused messages left %d inbox rows", len(m.Inbox()))
	}
	var got []string
	for range 2 {
		res, err := svc.Record(context.Background(), created(msgA, 100))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.Disposition.String())
	}
	if strings.Join(got, ",") != "recorded,duplicate" {
		t.Errorf("outcomes: got %v, want recorded,duplicate", got)
	}
	if row := m.Inbox()[msgA]; !row.ProcessedAt.IsZero() || len(m.Transactions()) != 0 {
		t.Errorf("recorded: processed_at %v and %d transactions, want pending and none", row.ProcessedAt, len(m.Transactions()))
	}
}

// TestProcessorAppliesAndNotesDuplicates: the processor posts recorded
// messages in any order, and a fact recorded twice under two message ids is
// posted once, the second noted.
func TestProcessorAppliesAndNotesDuplicates(t *testing.T) {
	m := postingtest.NewFakeStore()
	svc := newService(m)
	ctx := context.Background()
	for _, b := range [][]byte{refunded(msgA, 300, 300), created(msgB, 1000), created(msgC, 1000)} {
		if _, err := svc.Record(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	metrics := &countingMetrics{}
	p := posting.NewProcessor(posting.ProcessorConfig{}, m, &postingtest.FakeSchemas{}, quiet, metrics, time.Now)
	if n := step(t, p); n != 3 {
		t.Fatalf("claimed %d, want 3", n)
	}
	if n := step(t, p); n != 0 {
		t.Fatalf("second step claimed %d, want 0", n)
	}
	if len(m.Transactions()) != 2 || metrics.posted != 2 || metrics.already != 1 {
		t.Errorf("got %d transactions, metrics %+v; want 2 posted, 1 already posted", len(m.Transactions()), metrics)
	}
	if b := balance(t, svc, "merchant:mer_1"); b != 700 {
		t.Errorf("merchant: got %d, want 700", b)
	}
	notes := 0
	for _, row := range m.Inbox() {
		if row.ProcessedAt.IsZero() {
			t.Errorf("row %s not processed", row.ID)
		}
		if strings.Contains(row.Error, "business key") {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("rows noted as already posted: got %d, want 1", notes)
	}
}

// TestProcessorFallsBackToOneRowPerTransaction: when a batch's commit fails,
// the processor re-applies its rows one per transaction, so only the row at
// fault is charged; after MaxAttempts it is parked, and the others were never
// held back.
func TestProcessorFallsBackToOneRowPerTransaction(t *testing.T) {
	m := postingtest.NewFakeStore()
	svc := newService(m)
	ctx := context.Background()
	for _, b := range [][]byte{created(msgA, 1000), refunded(msgB, 300, 300)} {
		if _, err := svc.Record(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	m.FailCommitsPosting(msgA, errors.New("deferred check refused"))
	metrics := &countingMetrics{}
	p := posting.NewProcessor(posting.ProcessorConfig{MaxAttempts: 2, BackoffBase: time.Nanosecond, BackoffMax: time.Nanosecond},
		m, &postingtest.FakeSchemas{}, quiet, metrics, time.Now)
	step(t, p)
	if row := m.Inbox()[msgB]; row.ProcessedAt.IsZero() {
		t.Fatal("the good row was held back by the bad row's commit failure")
	}
	if attempts, parked, _ := m.Attempts(msgA); attempts != 1 || parked {
		t.Fatalf("bad row: %d attempts, parked %v; want 1, not parked", attempts, parked)
	}
	step(t, p)
	if attempts, parked, _ := m.Attempts(msgA); attempts != 2 || !parked {
		t.Fatalf("bad row: %d attempts, parked %v; want 2, parked", attempts, parked)
	}
	if n := step(t, p); n != 0 {
		t.Errorf("a parked row was claimed")
	}
	if metrics.retried != 1 || metrics.parked != 1 || metrics.posted != 1 {
		t.Errorf("metrics: got %+v, want 1 retried, 1 parked, 1 posted", metrics)
	}
	if !strings.Contains(m.Inbox()[msgA].Error, "deferred check refused") {
		t.Errorf("bad row's error: got %q", m.Inbox()[msgA].Error)
	}
	m.FailCommitsPosting(msgA, nil)
	if n, err := m.Retry(ctx, nil); err != nil || n != 1 {
		t.Fatalf("Retry: %d, %v", n, err)
	}
	step(t, p)
	if row := m.Inbox()[msgA]; row.ProcessedAt.IsZero() || len(m.Transactions()) != 2 {
		t.Errorf("after retry: processed_at %v, %d transactions; want processed and 2", row.ProcessedAt, len(m.Transactions()))
	}
}

// TestTypesLearnedLaterAreAppliedOnce: a message of a type this version does
// not apply is recorded, acknowledged and left pending, in both modes, and
// the processor leaves it alone (no attempt, no error). After a deploy of a
// version that applies the type — new Service and Processor — the processor
// applies each such message once, and a redelivery is a duplicate.
func TestTypesLearnedLaterAreAppliedOnce(t *testing.T) { // not parallel: LearnType changes the registry
	const disputed = "payment.disputed"
	m := postingtest.NewFakeStore()
	ctx := context.Background()
	body := func(id, payment string) []byte {
		return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":%q,"source":"/payments","time":"2026-11-29T12:00:00Z","dataversion":"1",
"data":{"payment_id":%q,"amount":250,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1"}}`, id, disputed, payment))
	}
	sync, async := body(msgA, paymentID), body(msgB, refundID)

	old := newService(m)
	if res, err := old.Apply(ctx, sync); err != nil || res.Disposition != posting.Ignored {
		t.Fatalf("sync, unknown type: got %v, %v; want ignored", res.Disposition, err)
	}
	if res, err := old.Record(ctx, async); err != nil || res.Disposition != posting.Ignored {
		t.Fatalf("async, unknown type: got %v, %v; want ignored", res.Disposition, err)
	}
	oldProc := posting.NewProcessor(posting.ProcessorConfig{}, m, &postingtest.FakeSchemas{}, quiet, nil, time.Now)
	if n := step(t, oldProc); n != 0 {
		t.Fatalf("this version's processor claimed %d rows of a type it does not apply", n)
	}
	for _, id := range []string{msgA, msgB} {
		if attempts, parked, _ := m.Attempts(id); attempts != 0 || parked || !m.Inbox()[id].ProcessedAt.IsZero() {
			t.Fatalf("row %s: %d attempts, parked %v; want pending and untouched", id, attempts, parked)
		}
	}
	if st, _ := m.InboxStats(ctx, posting.AppliedTypes()); st.Unhandled != 2 || st.Pending != 0 {
		t.Errorf("stats: got %+v, want 2 unhandled, 0 pending", st)
	}

	posting.LearnType(t, disputed, "dispute") // the deploy
	svc := newService(m)
	p := posting.NewProcessor(posting.ProcessorConfig{}, m, &postingtest.FakeSchemas{}, quiet, nil, time.Now)
	if n := step(t, p); n != 2 {
		t.Fatalf("the new version's processor claimed %d, want 2", n)
	}
	if n := step(t, p); n != 0 {
		t.Fatalf("claimed %d more, want 0", n)
	}
	if res, err := svc.Apply(ctx, sync); err != nil || res.Disposition != posting.Duplicate {
		t.Errorf("redelivery: got %v, %v; want duplicate", res.Disposition, err)
	}
	txs := m.Transactions()
	if len(txs) != 2 || txs[0].Kind() != "dispute" || txs[1].Kind() != "dispute" {
		t.Fatalf("got %d transactions, want 2 disputes, one per message", len(txs))
	}
}

// TestProcessorParksAPostingPastTheBalanceLimitAtOnce: in the async mode, a
// row whose posting would take a balance past int64 can never apply. Its
// batch fails at commit, where the balances are added; the processor applies
// the batch's rows one per transaction, the others commit, and it parks that
// row at its first attempt, as a row whose data can never post.
func TestProcessorParksAPostingPastTheBalanceLimitAtOnce(t *testing.T) {
	m := postingtest.NewFakeStore()
	svc := newService(m)
	ctx := context.Background()
	for _, b := range [][]byte{
		createdOf(msgA, "7d4f8f7c-1d2b-4a53-b8d4-000000000001", math.MaxInt64),
		createdOf(msgB, "7d4f8f7c-1d2b-4a53-b8d4-000000000002", math.MaxInt64),
	} {
		if _, err := svc.Record(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	metrics := &countingMetrics{}
	p := posting.NewProcessor(posting.ProcessorConfig{MaxAttempts: 10}, m, &postingtest.FakeSchemas{}, quiet, metrics, time.Now)
	if n := step(t, p); n != 2 {
		t.Fatalf("claimed %d, want 2", n)
	}
	if n := step(t, p); n != 0 {
		t.Fatalf("claimed %d again, want 0: the refused row is parked, not retried", n)
	}
	parked := 0
	for _, id := range []string{msgA, msgB} {
		attempts, isParked, err := m.Attempts(id)
		if err != nil {
			t.Fatal(err)
		}
		if isParked {
			parked++
			if row := m.Inbox()[id]; attempts != 1 || !strings.Contains(row.Error, ledger.ErrBalanceLimit.Error()) {
				t.Errorf("parked row %s: %d attempts, error %q; want 1 and the balance limit", id, attempts, row.Error)
			}
		}
	}
	if parked != 1 || metrics.posted != 1 || metrics.parked != 1 || metrics.retried != 0 {
		t.Errorf("got %d parked, metrics %+v; want one posted, one parked, none retried", parked, metrics)
	}
	if got := balance(t, svc, "merchant:mer_1"); got != math.MaxInt64 {
		t.Errorf("merchant: got %d, want %d", got, int64(math.MaxInt64))
	}
}

// TestProcessorPostsABatchInLockOrder: the database adds a batch's postings
// to their balances at commit, in the order they were posted, so the
// processor posts each batch by (merchant, currency, payer), whatever order
// the rows were claimed in: two batches' commits then lock the balance rows
// they share in the same order, and never deadlock.
func TestProcessorPostsABatchInLockOrder(t *testing.T) {
	m := postingtest.NewFakeStore()
	svc := newService(m)
	ctx := context.Background()
	parties := []struct{ merchant, currency, payer string }{
		{"mer_2", "BRL", "cus_1"}, {"mer_1", "USD", "cus_1"}, {"mer_1", "BRL", "cus_9"},
		{"mer_1", "BRL", "cus_1"}, {"mer_0", "USD", "cus_5"}, {"mer_2", "BRL", "cus_0"},
	}
	for i, p := range parties {
		body := strings.NewReplacer(`"merchant_id":"mer_1"`, `"merchant_id":"`+p.merchant+`"`,
			`"payer_id":"cus_1"`, `"payer_id":"`+p.payer+`"`, `"currency":"BRL"`, `"currency":"`+p.currency+`"`,
		).Replace(string(createdOf(fmt.Sprintf("0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6b%02d", i), fmt.Sprintf("7d4f8f7c-1d2b-4a53-b8d4-0000000000%02d", i), 100)))
		if _, err := svc.Record(ctx, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	p := posting.NewProcessor(posting.ProcessorConfig{BatchSize: 10}, m, &postingtest.FakeSchemas{}, quiet, nil, time.Now)
	if n := step(t, p); n != len(parties) {
		t.Fatalf("claimed %d, want %d in one batch", n, len(parties))
	}
	var got []string
	for _, tx := range m.Transactions() {
		es := tx.Entries()
		got = append(got, es[1].Account().Merchant()+" "+tx.Currency()+" "+es[0].Account().Payer())
	}
	want := []string{"mer_0 USD cus_5", "mer_1 BRL cus_1", "mer_1 BRL cus_9", "mer_1 USD cus_1", "mer_2 BRL cus_0", "mer_2 BRL cus_1"}
	if !slices.Equal(got, want) {
		t.Errorf("posting order:\ngot  %q\nwant %q", got, want)
	}
}
