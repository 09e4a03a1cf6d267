package ledgers_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/ledgers/ledgerstest"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// TestEveryDependentWaitsForItsPredecessor delivers each published event
// (docs/events) to an empty ledger, as delivery out of order can: one whose
// kind depends on another (its postings' DependsOn) must wait —
// ledger.ErrOutOfOrder, not a refusal, nothing written — and one that
// declares it depends on nothing must apply, so that a kind that needs a
// fact before it but forgot to declare it fails here. A kind a fork adds is
// checked as soon as it publishes a sample.
func TestEveryDependentWaitsForItsPredecessor(t *testing.T) {
	docs, err := filepath.Glob("../../docs/events/*.json")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no documents in docs/events: %v", err)
	}
	dependents := 0
	for _, path := range docs {
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := inbox.Decode(body)
		if err != nil {
			t.Fatal(err)
		}
		version, err := ev.Version()
		if err != nil {
			t.Fatal(err)
		}
		in, err := ledgers.Handler{}.Check(ev, version)
		if err != nil {
			continue // not posted: TestEveryPublishedEventIsPostedOrIgnored says why
		}
		d, _ := ledgers.PostingsOf(in.Kind())
		m := ledgerstest.NewFakeStore()
		_, err = newService(m).Apply(context.Background(), body)
		if len(d.DependsOn) == 0 {
			if err != nil {
				t.Errorf("%s: %s depends on nothing, yet on an empty ledger: %v", filepath.Base(path), in.Kind(), err)
			}
			continue
		}
		dependents++
		if !errors.Is(err, ledger.ErrOutOfOrder) || errors.Is(err, inbox.ErrPermanent) {
			t.Errorf("%s: %s depends on %v; on an empty ledger got %v, want ledger.ErrOutOfOrder, retried", filepath.Base(path), in.Kind(), d.DependsOn, err)
		}
		if n := len(m.Transactions()); n != 0 {
			t.Errorf("%s: %s waiting for %v posted %d transactions", filepath.Base(path), in.Kind(), d.DependsOn, n)
		}
	}
	if dependents == 0 {
		t.Fatal("no published event's kind depends on another; the test is not looking where it should")
	}
}

// TestAFactWaitsForItsOwnOpening: a kind that posts a plain transfer, as a
// fork's new kind does, waits for the fact its postings say it follows, and
// for that very fact: a dispute's close for the opening of the same dispute
// (its fact id), whatever else the payment has. An opening whose
// predecessors the payment's record rules out is refused, not posted. Not
// parallel: LearnPostings changes the registry.
func TestAFactWaitsForItsOwnOpening(t *testing.T) {
	const opened, won = "payment.dispute_opened", "payment.dispute_won"
	ledgers.LearnPostings(t, opened, ledger.Postings{Kind: "dispute", Debit: ledger.RoleMerchant, Credit: ledger.RolePayer,
		DependsOn: []ledger.Kind{"payment", "capture"}})
	ledgers.LearnPostings(t, won, ledger.Postings{Kind: "dispute_won", Debit: ledger.RolePayer, Credit: ledger.RoleMerchant,
		DependsOn: []ledger.Kind{"dispute"}})
	const (
		dispute1 = "0b7e2f5e-7c41-4c55-9a57-3a3d0c1fd001"
		dispute2 = "0b7e2f5e-7c41-4c55-9a57-3a3d0c1fd002"
	)
	n := 0
	dispute := func(typ, id string, amount int64) []byte {
		n++
		return []byte(fmt.Sprintf(`{"specversion":"1.0","id":"0b7e2f5e-7c41-4c55-9a57-3a3d0c1f%04d","type":%q,"dataschema":"https://payments-outbox.example/schemas/events/%[2]s/v1.json","source":"/payments",
"time":"2026-11-29T12:00:01Z",
"data":{"payment_id":%q,"refund_id":%q,"amount":%d,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1"}}`, n, typ, paymentID, id, amount))
	}
	m := ledgerstest.NewFakeStore()
	svc := newService(m)
	ctx := context.Background()
	waits := func(what string, body []byte) {
		t.Helper()
		if _, err := svc.Apply(ctx, body); !errors.Is(err, ledger.ErrOutOfOrder) || errors.Is(err, inbox.ErrPermanent) {
			t.Errorf("%s: got %v, want ledger.ErrOutOfOrder", what, err)
		}
	}
	applies := func(what string, body []byte) {
		t.Helper()
		if res, err := svc.Apply(ctx, body); err != nil || res.Disposition != inbox.Applied {
			t.Fatalf("%s: got %v, %v; want applied", what, res.Disposition, err)
		}
	}
	waits("a dispute won before anything", dispute(won, dispute1, 250))
	waits("a dispute opened before its payment", dispute(opened, dispute1, 250))
	applies("the payment", created(msgA, 1000))
	waits("a dispute won before its opening, the payment applied", dispute(won, dispute1, 250))
	applies("the opening", dispute(opened, dispute1, 250))
	waits("the win of another dispute of the payment", dispute(won, dispute2, 250))
	applies("the win", dispute(won, dispute1, 250))
	other := strings.Replace(string(dispute(opened, dispute2, 10)), `"mer_1"`, `"mer_2"`, 1)
	if res, err := svc.Apply(ctx, []byte(other)); err != nil || res.Disposition != inbox.Parked {
		t.Errorf("a dispute naming another merchant than its payment's: got %v, %v; want refused, parked", res.Disposition, err)
	}
	if got := balance(t, svc, "merchant:mer_1"); got != 1000 {
		t.Errorf("merchant: got %d, want 1000 (paid 1000, 250 disputed, the dispute won)", got)
	}

	// A canceled payment captured nothing, and never will: a dispute of it
	// is refused for good, not posted and not left waiting.
	const canceledID = "7d4f8f7c-1d2b-4a53-b8d4-1d5b4cf1b7a9"
	for _, body := range []string{
		`{"specversion":"1.0","id":"0b7e2f5e-7c41-4c55-9a57-3a3d0c1fa001","type":"payment.authorized","source":"/payments","time":"2026-11-29T12:00:00Z","dataschema":"https://payments-outbox.example/schemas/events/payment.authorized/v1.json",
"data":{"payment_id":"` + canceledID + `","amount":700,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1","capture_before":"2026-12-06T12:00:00Z"}}`,
		`{"specversion":"1.0","id":"0b7e2f5e-7c41-4c55-9a57-3a3d0c1fa002","type":"payment.canceled","source":"/payments","time":"2026-11-29T12:00:00Z","dataschema":"https://payments-outbox.example/schemas/events/payment.canceled/v1.json",
"data":{"payment_id":"` + canceledID + `","amount":700,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1","cancellation_reason":"expired"}}`,
	} {
		applies("a payment authorized then canceled", []byte(body))
	}
	body := []byte(fmt.Sprintf(`{"specversion":"1.0","id":"0b7e2f5e-7c41-4c55-9a57-3a3d0c1fa003","type":%q,"dataschema":"https://payments-outbox.example/schemas/events/%[1]s/v1.json","source":"/payments","time":"2026-11-29T12:00:01Z",
"data":{"payment_id":%q,"refund_id":%q,"amount":100,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1"}}`, opened, canceledID, dispute2))
	res, err := svc.Apply(ctx, body)
	if err != nil || res.Disposition != inbox.Parked || !strings.Contains(m.Inbox()["0b7e2f5e-7c41-4c55-9a57-3a3d0c1fa003"].Error, ledger.ErrPaymentConflict.Error()) {
		t.Errorf("a dispute of a canceled payment: got %v, %v; want refused (ledger.ErrPaymentConflict), parked", res.Disposition, err)
	}
	if txs, _ := svc.Entries(ctx, canceledID); len(txs) != 0 {
		t.Errorf("a dispute of a canceled payment posted %d transactions", len(txs))
	}
}
