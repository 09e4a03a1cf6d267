package ledgers_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/ledgers/ledgerstest"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

func step(t *testing.T, p *inbox.Processor[ledgers.Ledger, ledgers.Instruction]) int {
	t.Helper()
	n, err := p.Step(context.Background())
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	return n
}

type countingMetrics struct {
	posted, already, retried, parked int
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

func (c *countingMetrics) Backlog(inbox.Stats) {}

// TestTypesLearnedLaterAreAppliedOnce: a message of a type this version does
// not post is recorded, acknowledged and left pending, in both modes, and
// the processor leaves it alone (no attempt, no error). After a deploy of a
// version whose registry posts the type — one entry in events.go, new
// Service and Processor — the processor posts each such message once, and
// a redelivery is a duplicate.
func TestTypesLearnedLaterAreAppliedOnce(t *testing.T) { // not parallel: LearnType changes the registry
	const later = "payment.not_yet_known"
	m := ledgerstest.NewFakeStore()
	ctx := context.Background()
	body := func(id, payment string) []byte {
		return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":%q,"dataschema":"https://payments-outbox.example/schemas/events/%[2]s/v1.json","source":"/payments","time":"2026-11-29T12:00:00Z",
"data":{"payment_id":%q,"amount":250,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1"}}`, id, later, payment))
	}
	sync, async := body(msgA, paymentID), body(msgB, refundID)

	old := newService(m)
	if res, err := old.Apply(ctx, sync); err != nil || res.Disposition != inbox.Ignored {
		t.Fatalf("sync, unknown type: got %v, %v; want ignored", res.Disposition, err)
	}
	if res, err := old.Record(ctx, async); err != nil || res.Disposition != inbox.Ignored {
		t.Fatalf("async, unknown type: got %v, %v; want ignored", res.Disposition, err)
	}
	oldProc := old.proc
	if n := step(t, oldProc); n != 0 {
		t.Fatalf("this version's processor claimed %d rows of a type it does not apply", n)
	}
	for _, id := range []string{msgA, msgB} {
		if attempts, parked, _ := m.Attempts(id); attempts != 0 || parked || !m.Inbox()[id].ProcessedAt.IsZero() {
			t.Fatalf("row %s: %d attempts, parked %v; want pending and untouched", id, attempts, parked)
		}
	}
	if st, _ := m.InboxStats(ctx, ledgers.AppliedTypes()); st.Unhandled != 2 || st.Pending != 0 {
		t.Errorf("stats: got %+v, want 2 unhandled, 0 pending", st)
	}

	ledgers.LearnType(t, later, "later") // the deploy
	svc := newService(m)
	p := svc.proc
	if n := step(t, p); n != 2 {
		t.Fatalf("the new version's processor claimed %d, want 2", n)
	}
	if n := step(t, p); n != 0 {
		t.Fatalf("claimed %d more, want 0", n)
	}
	if res, err := svc.Apply(ctx, sync); err != nil || res.Disposition != inbox.Duplicate {
		t.Errorf("redelivery: got %v, %v; want duplicate", res.Disposition, err)
	}
	txs := m.Transactions()
	if len(txs) != 2 || txs[0].Kind() != "later" || txs[1].Kind() != "later" {
		t.Fatalf("got %d transactions, want 2 of the learned kind, one per message", len(txs))
	}
}

// TestProcessorParksAPostingPastTheBalanceLimitAtOnce: in the async mode, a
// row whose posting would take a balance past int64 can never apply. Its
// batch fails at commit, where the balances are added; the processor applies
// the batch's rows one per transaction, the others commit, and it parks that
// row at its first attempt, as a row whose data can never post.
func TestProcessorParksAPostingPastTheBalanceLimitAtOnce(t *testing.T) {
	m := ledgerstest.NewFakeStore()
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
	p := newBooks(m, &inboxtest.FakeSchemas{}, metrics, inbox.ProcessorConfig{MaxAttempts: 10}).proc
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
	m := ledgerstest.NewFakeStore()
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
	p := newBooks(m, &inboxtest.FakeSchemas{}, nil, inbox.ProcessorConfig{BatchSize: 10}).proc
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
