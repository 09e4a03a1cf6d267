package ledgers_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/ledgers/ledgerstest"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

var (
	now = time.Date(2026, 11, 29, 12, 0, 1, 0, time.UTC)
)

const (
	paymentID = "7d4f8f7c-1d2b-4a53-b8d4-1d5b4cf1b7a2"
	refundID  = "5a0b1b42-5c4a-4d84-9d0c-9a1f2f0b3c11"
	msgA      = "0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6a01"
	msgB      = "0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6a02"
	msgC      = "0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6a03"
)

func created(id string, amount int64) []byte {
	return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","source":"/payments",
"subject":%q,"time":"2026-11-29T12:00:00.123Z","datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json",
"data":{"payment_id":%q,"amount":%d,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1"}}`,
		id, paymentID, paymentID, amount))
}

func refunded(id string, amount, total int64) []byte {
	return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.refunded","source":"/payments",
"subject":%q,"time":"2026-11-29T12:00:00.456Z","datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.refunded/v1.json",
"data":{"payment_id":%q,"refund_id":%q,"amount":%d,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1","refunded_amount":%d}}`,
		id, paymentID, paymentID, refundID, amount, total))
}

// books is the ledger as cmd/ledger wires it, on the in-memory store: the
// shared inbox with the ledger's handler, in each mode, and the ledger's
// queries. Its handler takes any int64 amount, so that the tests can reach
// the balances' limit; the amount limit's own tests are in refusals_test.go.
type books struct {
	*ledgers.Service
	proc *inbox.Processor[ledgers.Ledger, ledgers.Instruction]
	sync *inbox.Service[ledgers.Ledger, ledgers.Instruction]
	rec  *inbox.Service[ledgers.Ledger, ledgers.Instruction]
}

func newBooks(m *ledgerstest.FakeStore, schemas inbox.Schemas, metrics inbox.ProcessorMetrics, cfg inbox.ProcessorConfig) books {
	proc := inbox.NewProcessor(m, ledgers.Handler{MaxAmount: math.MaxInt64}, schemas, logtest.Discard(), metrics, time.Now, cfg)
	clock := func() time.Time { return now }
	return books{Service: ledgers.NewService(m), proc: proc,
		sync: inbox.NewService(m, proc, clock, inbox.Config{Mode: inbox.Sync}),
		rec:  inbox.NewService(m, proc, clock, inbox.Config{Mode: inbox.Async})}
}

func newService(m *ledgerstest.FakeStore) books {
	return newBooks(m, &inboxtest.FakeSchemas{}, nil, inbox.ProcessorConfig{})
}

// Apply receives body in the sync mode; Record, in the async mode.
func (b books) Apply(ctx context.Context, body []byte) (inbox.Result, error) {
	return b.sync.Receive(ctx, body)
}

func (b books) Record(ctx context.Context, body []byte) (inbox.Result, error) {
	return b.rec.Receive(ctx, body)
}

func balance(t *testing.T, svc books, account string) int64 {
	t.Helper()
	bs, err := svc.Balances(context.Background(), account)
	if err != nil {
		t.Fatalf("Balances(%s): %v", account, err)
	}
	if len(bs) != 1 || bs[0].Currency() != "BRL" {
		t.Fatalf("Balances(%s): got %v, want one BRL balance", account, bs)
	}
	return bs[0].Amount()
}

func TestApplyPostsAPaymentOnce(t *testing.T) {
	m := ledgerstest.NewFakeStore()
	svc := newService(m)
	ctx := context.Background()
	var outcomes []string
	for range 3 {
		res, err := svc.Apply(ctx, created(msgA, 1050))
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		outcomes = append(outcomes, res.Disposition.String())
	}
	if got, want := strings.Join(outcomes, ","), "applied,duplicate,duplicate"; got != want {
		t.Errorf("outcomes: got %s, want %s", got, want)
	}
	if len(m.Transactions()) != 1 {
		t.Errorf("ledger transactions: got %d, want 1", len(m.Transactions()))
	}
	if got := balance(t, svc, "payer:mer_1:cus_1"); got != -1050 {
		t.Errorf("payer balance: got %d, want -1050", got)
	}
	if got := balance(t, svc, "merchant:mer_1"); got != 1050 {
		t.Errorf("merchant balance: got %d, want 1050", got)
	}
	if msg := m.Inbox()[msgA]; msg.ProcessedAt.IsZero() || msg.Type != ledgers.TypePaymentCreated {
		t.Errorf("inbox row: got %+v, want processed payment.created", msg)
	}
}

// TestApplyIsOrderIndependent: a refund that arrives before its payment
// waits (ledger.ErrOutOfOrder, nothing written, left for redelivery) and
// applies once the payment has; the balances end as if in order.
func TestApplyIsOrderIndependent(t *testing.T) {
	orders := map[string][][]byte{
		"in order":         {created(msgA, 1050), refunded(msgB, 500, 500)},
		"refund first":     {refunded(msgB, 500, 500), created(msgA, 1050)},
		"refund first dup": {refunded(msgB, 500, 500), refunded(msgB, 500, 500), created(msgA, 1050), created(msgA, 1050)},
	}
	for name, bodies := range orders {
		t.Run(name, func(t *testing.T) {
			m := ledgerstest.NewFakeStore()
			svc := newService(m)
			var waiting [][]byte
			for _, b := range bodies {
				_, err := svc.Apply(context.Background(), b)
				switch {
				case errors.Is(err, ledger.ErrOutOfOrder) && !errors.Is(err, inbox.ErrPermanent):
					waiting = append(waiting, b) // not acknowledged: redelivered
				case err != nil:
					t.Fatalf("Apply: %v", err)
				}
			}
			for _, b := range waiting {
				if _, err := svc.Apply(context.Background(), b); err != nil {
					t.Fatalf("redelivery: %v", err)
				}
			}
			if got := balance(t, svc, "payer:mer_1:cus_1"); got != -550 {
				t.Errorf("payer: got %d, want -550", got)
			}
			if got := balance(t, svc, "merchant:mer_1"); got != 550 {
				t.Errorf("merchant: got %d, want 550", got)
			}
			txs, err := svc.Entries(context.Background(), paymentID)
			if err != nil || len(txs) != 2 {
				t.Errorf("Entries: got %d transactions, %v; want 2", len(txs), err)
			}
		})
	}
}

func TestApplySameFactUnderAnotherMessageID(t *testing.T) {
	m := ledgerstest.NewFakeStore()
	svc := newService(m)
	if _, err := svc.Apply(context.Background(), created(msgA, 1050)); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Apply(context.Background(), created(msgC, 1050))
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if res.Disposition != inbox.Duplicate {
		t.Errorf("outcome: got %s, want duplicate", res.Disposition)
	}
	if len(m.Transactions()) != 1 {
		t.Errorf("ledger transactions: got %d, want 1", len(m.Transactions()))
	}
	if note := m.Inbox()[msgC].Error; !strings.Contains(note, "business key") {
		t.Errorf("inbox note: got %q, want it to mention the business key", note)
	}
}

func TestApplyRejectsBadMessages(t *testing.T) {
	good := string(created(msgA, 1050))
	tests := []struct {
		name string
		body string
		want error
	}{
		{"not json", `{"specversion":`, inbox.ErrMalformed},
		{"json array", `[1,2]`, inbox.ErrMalformed},
		{"sns envelope (raw delivery off)", `{"Type":"Notification","MessageId":"x","TopicArn":"arn","Message":"{}"}`, inbox.ErrMalformed},
		{"invalid utf-8", strings.Replace(good, "cus_1", "cus_\xff", 1), inbox.ErrMalformed},
		{"nul character", strings.Replace(good, "cus_1", `cus_\u0000`, 1), inbox.ErrMalformed},
		{"escaped backslash before u0000 is fine but a control char", strings.Replace(good, "cus_1", `cus_\\u0000\n`, 1), inbox.ErrInvalidEvent},
		{"wrong specversion", strings.Replace(good, `"1.0"`, `"0.3"`, 1), inbox.ErrMalformed},
		{"id not a uuid", strings.Replace(good, msgA, "42", 1), inbox.ErrMalformed},
		{"no type", strings.Replace(good, `"type":"payment.created",`, "", 1), inbox.ErrMalformed},
		{"negative amount", strings.Replace(good, `"amount":1050`, `"amount":-1`, 1), inbox.ErrInvalidEvent},
		{"fractional amount", strings.Replace(good, `"amount":1050`, `"amount":10.5`, 1), inbox.ErrInvalidEvent},
		{"string amount", strings.Replace(good, `"amount":1050`, `"amount":"1050"`, 1), inbox.ErrInvalidEvent},
		{"missing amount", strings.Replace(good, `"amount":1050,`, ``, 1), inbox.ErrInvalidEvent},
		{"lower-case currency", strings.Replace(good, `"BRL"`, `"brl"`, 1), inbox.ErrInvalidEvent},
		{"missing payer", strings.Replace(good, `"payer_id":"cus_1",`, ``, 1), inbox.ErrInvalidEvent},
		{"unknown data version", strings.Replace(good, `/v1.json"`, `/v2.json"`, 1), inbox.ErrInvalidEvent},
		{"bad time", strings.Replace(good, `2026-11-29T12:00:00.123Z`, `yesterday`, 1), inbox.ErrInvalidEvent},
		{"no data", strings.Replace(good, `"data":{`, `"nodata":{`, 1), inbox.ErrInvalidEvent},
		{"subject mismatch", strings.Replace(good, `"subject":"`+paymentID, `"subject":"`+refundID, 1), inbox.ErrInvalidEvent},
		{"refund without refund id", strings.Replace(string(refunded(msgA, 5, 5)), `"refund_id":"`+refundID+`",`, ``, 1), inbox.ErrInvalidEvent},
		{"refund total below amount", string(refunded(msgA, 5, 4)), inbox.ErrInvalidEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := ledgerstest.NewFakeStore()
			_, err := newService(m).Apply(context.Background(), []byte(tt.body))
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
			if len(m.Inbox()) != 0 {
				t.Errorf("inbox rows: got %d, want 0 (a rejected message must reach the DLQ, not look like a duplicate)", len(m.Inbox()))
			}
		})
	}
}

func TestQueries(t *testing.T) {
	svc := newService(ledgerstest.NewFakeStore())
	ctx := context.Background()
	if _, err := svc.Balances(ctx, ""); !errors.Is(err, ledger.ErrInvalidAccount) {
		t.Errorf("empty account: got %v, want ErrInvalidAccount", err)
	}
	if _, err := svc.Balances(ctx, "mer_1"); !errors.Is(err, ledger.ErrInvalidAccount) {
		t.Errorf("a name without its role: got %v, want ErrInvalidAccount", err)
	}
	if _, err := svc.Balances(ctx, "merchant:nobody"); !errors.Is(err, ledger.ErrAccountNotFound) {
		t.Errorf("unknown account: got %v, want ErrAccountNotFound", err)
	}
	if _, err := svc.Entries(ctx, paymentID); !errors.Is(err, ledger.ErrPaymentNotFound) {
		t.Errorf("unknown payment: got %v, want ErrPaymentNotFound", err)
	}
}

// createdOf is created for a payment of its own, so that two of them are two
// facts.
func createdOf(msgID, payment string, amount int64) []byte {
	return []byte(strings.ReplaceAll(string(created(msgID, amount)), paymentID, payment))
}

// TestApplyParksAPostingPastTheBalanceLimit: in the sync mode, a posting the
// store refuses for good (ErrBalanceLimit) is not left for redelivery — it
// would be refused forever, and the queue would move it to the DLQ as if it
// were malformed — but recorded in the inbox parked, with the reason, and
// acknowledged; the first posting stands.
func TestApplyParksAPostingPastTheBalanceLimit(t *testing.T) {
	m := ledgerstest.NewFakeStore()
	svc := newService(m)
	ctx := context.Background()
	first := createdOf(msgA, "7d4f8f7c-1d2b-4a53-b8d4-000000000001", math.MaxInt64)
	second := createdOf(msgB, "7d4f8f7c-1d2b-4a53-b8d4-000000000002", math.MaxInt64)
	if res, err := svc.Apply(ctx, first); err != nil || res.Disposition != inbox.Applied {
		t.Fatalf("first: got %v, %v; want applied", res.Disposition, err)
	}
	res, err := svc.Apply(ctx, second)
	if err != nil || res.Disposition != inbox.Parked || res.MessageID != msgB {
		t.Fatalf("second: got %+v, %v; want parked, no error (acknowledge it)", res, err)
	}
	row := m.Inbox()[msgB]
	if attempts, parked, err := m.Attempts(msgB); err != nil || !parked || attempts != 1 || !row.ProcessedAt.IsZero() ||
		!strings.Contains(row.Error, ledger.ErrBalanceLimit.Error()) || !strings.Contains(row.Error, ":mer_1") {
		t.Errorf("inbox row: parked=%v attempts=%d processed=%v error %q (%v); want parked once, unprocessed, the reason naming the account",
			parked, attempts, row.ProcessedAt, row.Error, err)
	}
	if got := balance(t, svc, "merchant:mer_1"); got != math.MaxInt64 {
		t.Errorf("merchant: got %d, want the first payment's %d", got, int64(math.MaxInt64))
	}
	if len(m.Transactions()) != 1 {
		t.Errorf("ledger transactions: got %d, want 1", len(m.Transactions()))
	}
	if st, _ := m.InboxStats(ctx, ledgers.AppliedTypes()); st.Parked != 1 {
		t.Errorf("stats: got %+v, want 1 parked (inbox_parked_rows pages on it)", st)
	}
	if res, err := svc.Apply(ctx, second); err != nil || res.Disposition != inbox.Duplicate {
		t.Errorf("redelivery of the parked message: got %v, %v; want duplicate", res.Disposition, err)
	}
}
