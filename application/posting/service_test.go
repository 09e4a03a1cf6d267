package posting_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/posting"
	"github.com/payments-outbox/payments-outbox/application/posting/postingtest"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

var now = time.Date(2026, 11, 29, 12, 0, 1, 0, time.UTC)

const (
	paymentID = "7d4f8f7c-1d2b-4a53-b8d4-1d5b4cf1b7a2"
	refundID  = "5a0b1b42-5c4a-4d84-9d0c-9a1f2f0b3c11"
	msgA      = "0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6a01"
	msgB      = "0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6a02"
	msgC      = "0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6a03"
)

func created(id string, amount int64) []byte {
	return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","source":"/payments",
"subject":%q,"time":"2026-11-29T12:00:00.123Z","datacontenttype":"application/json","dataversion":"1",
"data":{"payment_id":%q,"amount":%d,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1"}}`,
		id, paymentID, paymentID, amount))
}

func refunded(id string, amount, total int64) []byte {
	return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.refunded","source":"/payments",
"subject":%q,"time":"2026-11-29T12:00:00.456Z","datacontenttype":"application/json","dataversion":"1",
"data":{"payment_id":%q,"refund_id":%q,"amount":%d,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1","refunded_amount":%d}}`,
		id, paymentID, paymentID, refundID, amount, total))
}

func newService(m *postingtest.FakeStore) *posting.Service {
	return posting.NewService(m, m, &postingtest.FakeSchemas{}, func() time.Time { return now })
}

func balance(t *testing.T, svc *posting.Service, account string) int64 {
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
	m := postingtest.NewFakeStore()
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
	if msg := m.Inbox()[msgA]; msg.ProcessedAt.IsZero() || msg.Type != posting.TypePaymentCreated {
		t.Errorf("inbox row: got %+v, want processed payment.created", msg)
	}
}

func TestApplyIsOrderIndependent(t *testing.T) {
	orders := map[string][][]byte{
		"in order":         {created(msgA, 1050), refunded(msgB, 500, 500)},
		"refund first":     {refunded(msgB, 500, 500), created(msgA, 1050)},
		"refund first dup": {refunded(msgB, 500, 500), refunded(msgB, 500, 500), created(msgA, 1050), created(msgA, 1050)},
	}
	for name, bodies := range orders {
		t.Run(name, func(t *testing.T) {
			m := postingtest.NewFakeStore()
			svc := newService(m)
			for _, b := range bodies {
				if _, err := svc.Apply(context.Background(), b); err != nil {
					t.Fatalf("Apply: %v", err)
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
	m := postingtest.NewFakeStore()
	svc := newService(m)
	if _, err := svc.Apply(context.Background(), created(msgA, 1050)); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Apply(context.Background(), created(msgC, 1050))
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if res.Disposition != posting.Duplicate {
		t.Errorf("outcome: got %s, want duplicate", res.Disposition)
	}
	if len(m.Transactions()) != 1 {
		t.Errorf("ledger transactions: got %d, want 1", len(m.Transactions()))
	}
	if note := m.Inbox()[msgC].Error; !strings.Contains(note, "business key") {
		t.Errorf("inbox note: got %q, want it to mention the business key", note)
	}
}

func TestApplyRecordsUnknownTypes(t *testing.T) {
	m := postingtest.NewFakeStore()
	svc := newService(m)
	body := []byte(`{"specversion":"1.0","id":"` + msgA + `","type":"payment.disputed","source":"/payments","data":{"x":1}}`)
	for _, want := range []posting.Disposition{posting.Ignored, posting.Duplicate} {
		res, err := svc.Apply(context.Background(), body)
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if res.Disposition != want {
			t.Errorf("outcome: got %s, want %s", res.Disposition, want)
		}
	}
	msg, ok := m.Inbox()[msgA]
	if !ok || !msg.ProcessedAt.IsZero() || msg.Error == "" {
		t.Errorf("inbox row: got %+v (present %v), want unprocessed with a reason", msg, ok)
	}
	if len(m.Transactions()) != 0 {
		t.Errorf("ledger transactions: got %d, want 0", len(m.Transactions()))
	}
}

// A type the ledger deliberately does not post is recorded done, in both
// modes: not left pending for a version that will never post it.
func TestIgnoredTypesAreRecordedProcessed(t *testing.T) {
	posting.IgnoreType(t, "payment.disputed", "disputes are settled by the card network")
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			m := postingtest.NewFakeStore()
			svc := newService(m)
			receive := svc.Apply
			if mode == "async" {
				receive = svc.Record
			}
			body := []byte(`{"specversion":"1.0","id":"` + msgA + `","type":"payment.disputed","source":"/payments","data":{"x":1}}`)
			for _, want := range []posting.Disposition{posting.Ignored, posting.Duplicate} {
				res, err := receive(context.Background(), body)
				if err != nil {
					t.Fatalf("receive: %v", err)
				}
				if res.Disposition != want {
					t.Errorf("outcome: got %s, want %s", res.Disposition, want)
				}
			}
			msg := m.Inbox()[msgA]
			if !msg.ProcessedAt.Equal(now) || !strings.Contains(msg.Error, "disputes are settled by the card network") {
				t.Errorf("inbox row: got processed at %v, note %q; want processed now, with the reason", msg.ProcessedAt, msg.Error)
			}
			st, err := m.InboxStats(context.Background(), posting.AppliedTypes())
			if err != nil {
				t.Fatal(err)
			}
			if st.Pending != 0 || st.Unhandled != 0 {
				t.Errorf("inbox stats: %+v, want nothing pending or unhandled", st)
			}
			if len(m.Transactions()) != 0 {
				t.Errorf("ledger transactions: got %d, want 0", len(m.Transactions()))
			}
		})
	}
}

func TestApplyRejectsBadMessages(t *testing.T) {
	good := string(created(msgA, 1050))
	tests := []struct {
		name string
		body string
		want error
	}{
		{"not json", `{"specversion":`, posting.ErrMalformed},
		{"json array", `[1,2]`, posting.ErrMalformed},
		{"sns envelope (raw delivery off)", `{"Type":"Notification","MessageId":"x","TopicArn":"arn","Message":"{}"}`, posting.ErrMalformed},
		{"invalid utf-8", strings.Replace(good, "cus_1", "cus_\xff", 1), posting.ErrMalformed},
		{"nul character", strings.Replace(good, "cus_1", `cus_\u0000`, 1), posting.ErrMalformed},
		{"escaped backslash before u0000 is fine but a control char", strings.Replace(good, "cus_1", `cus_\\u0000\n`, 1), posting.ErrInvalidEvent},
		{"wrong specversion", strings.Replace(good, `"1.0"`, `"0.3"`, 1), posting.ErrMalformed},
		{"id not a uuid", strings.Replace(good, msgA, "42", 1), posting.ErrMalformed},
		{"no type", strings.Replace(good, `"type":"payment.created",`, "", 1), posting.ErrMalformed},
		{"negative amount", strings.Replace(good, `"amount":1050`, `"amount":-1`, 1), posting.ErrInvalidEvent},
		{"fractional amount", strings.Replace(good, `"amount":1050`, `"amount":10.5`, 1), posting.ErrInvalidEvent},
		{"string amount", strings.Replace(good, `"amount":1050`, `"amount":"1050"`, 1), posting.ErrInvalidEvent},
		{"missing amount", strings.Replace(good, `"amount":1050,`, ``, 1), posting.ErrInvalidEvent},
		{"lower-case currency", strings.Replace(good, `"BRL"`, `"brl"`, 1), posting.ErrInvalidEvent},
		{"missing payer", strings.Replace(good, `"payer_id":"cus_1",`, ``, 1), posting.ErrInvalidEvent},
		{"unknown data version", strings.Replace(good, `"dataversion":"1"`, `"dataversion":"2"`, 1), posting.ErrInvalidEvent},
		{"bad time", strings.Replace(good, `2026-11-29T12:00:00.123Z`, `yesterday`, 1), posting.ErrInvalidEvent},
		{"no data", strings.Replace(good, `"data":{`, `"nodata":{`, 1), posting.ErrInvalidEvent},
		{"subject mismatch", strings.Replace(good, `"subject":"`+paymentID, `"subject":"`+refundID, 1), posting.ErrInvalidEvent},
		{"refund without refund id", strings.Replace(string(refunded(msgA, 5, 5)), `"refund_id":"`+refundID+`",`, ``, 1), posting.ErrInvalidEvent},
		{"refund total below amount", string(refunded(msgA, 5, 4)), posting.ErrInvalidEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := postingtest.NewFakeStore()
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

func TestApplyFailedCommitLeavesNothing(t *testing.T) {
	m := postingtest.NewFakeStore()
	m.FailCommits(errors.New("connection reset"))
	svc := newService(m)
	_, err := svc.Apply(context.Background(), created(msgA, 1050))
	if err == nil || errors.Is(err, posting.ErrMalformed) || errors.Is(err, posting.ErrInvalidEvent) {
		t.Fatalf("got %v, want a transient error", err)
	}
	if len(m.Inbox()) != 0 || len(m.Transactions()) != 0 {
		t.Fatalf("got %d inbox rows and %d transactions after a failed commit, want none", len(m.Inbox()), len(m.Transactions()))
	}
	m.FailCommits(nil)
	res, err := svc.Apply(context.Background(), created(msgA, 1050))
	if err != nil || res.Disposition != posting.Applied {
		t.Errorf("redelivery: got %v, %v; want applied", res.Disposition, err)
	}
}

func TestQueries(t *testing.T) {
	svc := newService(postingtest.NewFakeStore())
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
	m := postingtest.NewFakeStore()
	svc := newService(m)
	ctx := context.Background()
	first := createdOf(msgA, "7d4f8f7c-1d2b-4a53-b8d4-000000000001", math.MaxInt64)
	second := createdOf(msgB, "7d4f8f7c-1d2b-4a53-b8d4-000000000002", math.MaxInt64)
	if res, err := svc.Apply(ctx, first); err != nil || res.Disposition != posting.Applied {
		t.Fatalf("first: got %v, %v; want applied", res.Disposition, err)
	}
	res, err := svc.Apply(ctx, second)
	if err != nil || res.Disposition != posting.Parked || res.MessageID != msgB {
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
	if st, _ := m.InboxStats(ctx, posting.AppliedTypes()); st.Parked != 1 {
		t.Errorf("stats: got %+v, want 1 parked (inbox_parked_rows pages on it)", st)
	}
	if res, err := svc.Apply(ctx, second); err != nil || res.Disposition != posting.Duplicate {
		t.Errorf("redelivery of the parked message: got %v, %v; want duplicate", res.Disposition, err)
	}
}

// TestApplyLeavesAMessageItCouldNotParkForRedelivery: if the transaction
// that parks the message fails too, nothing is acknowledged.
func TestApplyLeavesAMessageItCouldNotParkForRedelivery(t *testing.T) {
	m := postingtest.NewFakeStore()
	svc := newService(m)
	ctx := context.Background()
	if _, err := svc.Apply(ctx, createdOf(msgA, "7d4f8f7c-1d2b-4a53-b8d4-000000000001", math.MaxInt64)); err != nil {
		t.Fatal(err)
	}
	m.FailCommits(errors.New("connection reset"))
	res, err := svc.Apply(ctx, createdOf(msgB, "7d4f8f7c-1d2b-4a53-b8d4-000000000002", 1))
	if err == nil || !errors.Is(err, ledger.ErrBalanceLimit) || errors.Is(err, posting.ErrInvalidEvent) {
		t.Fatalf("got %v, %v; want a transient error naming the balance limit", res.Disposition, err)
	}
	if _, ok := m.Inbox()[msgB]; ok {
		t.Error("the message is in the inbox: its redelivery would be acknowledged as a duplicate")
	}
}
