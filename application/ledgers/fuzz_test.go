package ledgers_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/ledgers/ledgerstest"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// FuzzApply feeds arbitrary message bodies through the inbox's decode and
// the ledger's handler, received in the sync mode, over the in-memory store.
// Its seeds run with every `go test`; `go test -fuzz FuzzApply
// ./application/ledgers` explores further.
// For any body: no panic; a refusal is ErrMalformed or ErrInvalidEvent (so
// the message goes to the DLQ), or ledger.ErrOutOfOrder for an event ahead
// of the one it depends on (left for redelivery), and leaves nothing behind; an accepted body
// posts at most one balanced transaction with a positive amount, and its
// redelivery changes nothing.
func FuzzApply(f *testing.F) {
	const (
		pay = "01a229a3-739d-7ee0-9fd1-d6781f462db2"
		ref = "01a229a3-743d-7361-a2f4-805e63cbdf82"
	)
	for _, s := range []string{
		`{"specversion":"1.0","id":"01a229a3-73a0-7214-b3b5-bf1dfc39f09e","type":"payment.created","source":"/payments","subject":"` + pay + `","time":"2026-11-29T12:00:00.123Z","datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":"` + pay + `","amount":1050,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1"}}`,
		`{"specversion":"1.0","id":"01a229a3-743d-7e47-a1f1-0b0f350f414e","type":"payment.refunded","source":"/payments","subject":"` + pay + `","time":"2026-11-29T12:00:01Z","dataschema":"https://payments-outbox.example/schemas/events/payment.refunded/v1.json","data":{"payment_id":"` + pay + `","refund_id":"` + ref + `","amount":300,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1","refunded_amount":300}}`,
		`{"specversion":"1.0","id":"01a229a3-743d-7e47-a1f1-0b0f350f4150","type":"payment.captured","time":"2026-11-29T12:00:01Z","data":{}}`,
		`{"specversion":"1.0","id":"01A229A3-743D-7E47-A1F1-0B0F350F4150","type":"payment.created","time":"2026-11-29T12:00:01Z","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":"` + pay + `","amount":-5,"currency":"BRL","payer_id":"a","merchant_id":"b"}}`,
		`{"specversion":"1.0","id":"01a229a3-743d-7e47-a1f1-0b0f350f4151","type":"payment.created","time":"2026-11-29T12:00:01Z","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":"` + pay + `","amount":9223372036854775807,"currency":"XXX","payer_id":"a\u0000","merchant_id":"b"}}`,
		`{"specversion":"1.0","id":"01a229a3-743d-7e47-a1f1-0b0f350f4152","type":"payment.refunded","time":"2026-11-29T12:00:01Z","dataschema":"https://payments-outbox.example/schemas/events/payment.refunded/v2.json","data":{"payment_id":"` + pay + `"}}`,
		`{"specversion":"1.0","id":"01a229a3-743d-7e47-a1f1-0b0f350f4153","type":"payment.created","time":"yesterday","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":null}`,
		`{"specversion":"0.3","id":"x","type":"payment.created"}`,
		`{"id":"urn:uuid:01a229a3-743d-7e47-a1f1-0b0f350f4153","type":"payment.created"}`,
		`{"specversion":"1.0","id":"{01a229a3-743d-7e47-a1f1-0b0f350f4153}","type":"t","data":"x"}`,
		`not json at all`,
		`[]`,
		`null`,
		``,
		"\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		store := ledgerstest.NewFakeStore()
		svc := newService(store)
		ctx := context.Background()
		res, err := svc.Apply(ctx, body)
		if err != nil {
			if !errors.Is(err, inbox.ErrMalformed) && !errors.Is(err, inbox.ErrInvalidEvent) && !errors.Is(err, ledger.ErrOutOfOrder) {
				t.Fatalf("refused with %v: neither malformed nor invalid, so it would be retried forever instead of reaching the DLQ", err)
			}
			if len(store.Inbox()) != 0 || len(store.Transactions()) != 0 {
				t.Fatalf("a refused message left %d inbox rows and %d transactions", len(store.Inbox()), len(store.Transactions()))
			}
			return
		}
		if id, perr := uuid.Parse(res.MessageID); perr != nil || id.String() != res.MessageID {
			t.Fatalf("accepted message id %q is not a canonical UUID", res.MessageID)
		}
		switch res.Disposition {
		case inbox.Applied:
			if res.Type == ledgers.TypePaymentAuthorized {
				if len(store.Transactions()) != 0 {
					t.Fatalf("an authorization posted %d transactions, want none: it places a hold", len(store.Transactions()))
				}
				break
			}
			if len(store.Transactions()) != 1 {
				t.Fatalf("applied, but %d transactions posted", len(store.Transactions()))
			}
			tx := store.Transactions()[0]
			var sum int64
			for _, e := range tx.Entries() {
				sum += e.Amount()
				if e.Currency() != tx.Currency() {
					t.Fatalf("entry in %s of a %s transaction", e.Currency(), tx.Currency())
				}
			}
			if sum != 0 || tx.Amount() <= 0 || len(tx.Entries()) < 2 {
				t.Fatalf("posted %d entries summing to %d for amount %d", len(tx.Entries()), sum, tx.Amount())
			}
			if tx.MessageID() != res.MessageID {
				t.Fatalf("posted under message %s, applied %s", tx.MessageID(), res.MessageID)
			}
		case inbox.Parked:
			// Refused for good (an unknown currency, say): recorded parked,
			// nothing posted.
			if len(store.Transactions()) != 0 {
				t.Fatalf("a parked message posted %d transactions", len(store.Transactions()))
			}
		case inbox.Ignored:
			if len(store.Transactions()) != 0 {
				t.Fatalf("ignored type %q posted a transaction", res.Type)
			}
		default:
			t.Fatalf("outcome %v on an empty store", res.Disposition)
		}
		if len(store.Inbox()) != 1 {
			t.Fatalf("%d inbox rows after one message", len(store.Inbox()))
		}
		again, err := svc.Apply(ctx, body)
		if err != nil || again.Disposition != inbox.Duplicate || len(store.Transactions()) > 1 || len(store.Inbox()) != 1 {
			t.Fatalf("redelivery: %v %v, %d transactions and %d inbox rows", again.Disposition, err, len(store.Transactions()), len(store.Inbox()))
		}
	})
}
