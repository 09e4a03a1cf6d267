package ledgers_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/ledgers/ledgerstest"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

type refusalCounter map[string]int

func (c refusalCounter) Refused(kind ledger.Kind, reason string) { c[string(kind)+"/"+reason]++ }

// TestRefusalsAreCountedByKindAndReason: an event that contradicts the
// ledger is counted once, under its kind and reason; one that waits for the
// event ahead of it is no refusal.
func TestRefusalsAreCountedByKindAndReason(t *testing.T) {
	store := ledgerstest.NewFakeStore()
	counted := refusalCounter{}
	h := ledgers.Handler{Metrics: counted}
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const pay = "01a229b5-a3c0-7a3e-b1d2-4c5e6f708192"
	apply := func(id, typ, data string) error {
		ev := inbox.Event{ID: id, Type: typ, Time: at,
			Data: []byte(`{"payment_id":"` + pay + `","currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1",` + data + `}`)}
		in, err := h.Check(ev, "1")
		if err != nil {
			t.Fatalf("check: %v", err)
		}
		_, err = store.Record(context.Background(), inbox.Message{ID: id, Type: typ, Payload: []byte(`{}`), ReceivedAt: at, ProcessedAt: at},
			func(ctx context.Context, l ledgers.Ledger) (string, error) {
				_, err := h.Apply(ctx, l, in, at)
				return "", err
			})
		return err
	}
	capture := `"amount":3000,"amount_authorized":3000,"amount_released":0`
	if err := apply("01a229b5-0000-7000-8000-000000000001", ledgers.TypePaymentCaptured, capture); !errors.Is(err, ledger.ErrOutOfOrder) {
		t.Fatalf("a capture first: got %v, want ErrOutOfOrder", err)
	}
	if len(counted) != 0 {
		t.Errorf("a capture waiting for its authorization was counted as refused: %v", counted)
	}
	if err := apply("01a229b5-0000-7000-8000-000000000002", ledgers.TypePaymentAuthorized, `"amount":2500,"capture_before":"2026-12-08T12:00:00Z"`); err != nil {
		t.Fatal(err)
	}
	if err := apply("01a229b5-0000-7000-8000-000000000003", ledgers.TypePaymentCaptured, capture); !errors.Is(err, inbox.ErrPermanent) {
		t.Fatalf("a capture past the hold: got %v, want inbox.ErrPermanent", err)
	}
	if err := apply("01a229b5-0000-7000-8000-000000000004", ledgers.TypePaymentCanceled, `"amount":2500,"cancellation_reason":"expired","currency":"JPY"`); !errors.Is(err, inbox.ErrPermanent) {
		t.Fatalf("a cancellation in another currency: got %v, want inbox.ErrPermanent", err)
	}
	if counted["capture/payment_conflict"] != 1 || counted["cancellation/currency_mismatch"] != 1 || len(counted) != 2 {
		t.Errorf("got %v, want one capture/payment_conflict and one cancellation/currency_mismatch", counted)
	}
}

// TestEveryRefusalHasAReason: each error the ledger refuses an event with
// names a reason, so that the metric says why.
func TestEveryRefusalHasAReason(t *testing.T) {
	for _, err := range []error{ledger.ErrNoHold, ledger.ErrHoldReleased, ledger.ErrCaptureExceedsHold, ledger.ErrRefundExceedsCaptured,
		ledger.ErrCurrencyMismatch, ledger.ErrUnknownCurrency, ledger.ErrPaymentConflict, ledgers.ErrAmountLimit} {
		if ledgers.Reason(err) == "" {
			t.Errorf("%v has no reason: add it to refusals in application/ledgers/handler.go", err)
		}
	}
	for _, err := range []error{nil, ledger.ErrOutOfOrder, errors.New("connection refused")} {
		if r := ledgers.Reason(err); r != "" {
			t.Errorf("%v is no refusal, got reason %q", err, r)
		}
	}
}

// TestPaymentsOverTheAmountLimitAreRefusedByCheck: a payment captured at
// once or authorized above the handler's limit can never apply, so Check
// refuses it before anything is written, counted under its kind; one at
// the limit passes, and a capture or refund is not Check's to bound.
func TestPaymentsOverTheAmountLimitAreRefusedByCheck(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	event := func(typ string, amount int64, extra string) inbox.Event {
		return inbox.Event{ID: "01a229b5-0000-7000-8000-000000000001", Type: typ, Time: at,
			Data: []byte(fmt.Sprintf(`{"payment_id":"01a229b5-a3c0-7a3e-b1d2-4c5e6f708192","amount":%d,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1"%s}`, amount, extra))}
	}
	const authorized = `,"capture_before":"2026-12-08T12:00:00Z"`
	for _, tt := range []struct {
		name  string
		limit int64
		ev    inbox.Event
		want  error
	}{
		{"created at the default limit", 0, event(ledgers.TypePaymentCreated, ledgers.DefaultMaxAmount, ""), nil},
		{"created of 10^15", 0, event(ledgers.TypePaymentCreated, 1_000_000_000_000_000, ""), ledgers.ErrAmountLimit},
		{"authorized one past the default limit", 0, event(ledgers.TypePaymentAuthorized, ledgers.DefaultMaxAmount+1, authorized), ledgers.ErrAmountLimit},
		{"created past a lower limit", 1000, event(ledgers.TypePaymentCreated, 1001, ""), ledgers.ErrAmountLimit},
		{"authorized within a higher limit", math.MaxInt64, event(ledgers.TypePaymentAuthorized, math.MaxInt64, authorized), nil},
		{"a capture is bounded by its hold, not here", 1000, event(ledgers.TypePaymentCaptured, 5000, `,"amount_authorized":5000,"amount_released":0`), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			counted := refusalCounter{}
			_, err := ledgers.Handler{Metrics: counted, MaxAmount: tt.limit}.Check(tt.ev, "1")
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			switch {
			case tt.want != nil && (len(counted) != 1 || ledgers.Reason(err) != "amount_limit"):
				t.Errorf("counted %v, reason %q; want one refusal for amount_limit", counted, ledgers.Reason(err))
			case tt.want == nil && len(counted) != 0:
				t.Errorf("counted %v for an event that passes", counted)
			}
		})
	}
}
