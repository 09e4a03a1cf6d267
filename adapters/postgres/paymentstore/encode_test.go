package paymentstore_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/paymentstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// TestEncodeEventIsWhatTheRepositoryStores holds the tools to the real
// format: the document EncodeEvent renders for a payment's Created event is
// the outbox payload Create committed for the same payment.
func TestEncodeEventIsWhatTheRepositoryStores(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	repo := paymentstore.New(pool, paymentstore.Options{})
	p, err := payment.New(payment.ID(uuid.NewString()), 1050, "BRL", "cus_1", "mer_1", "x", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Create(context.Background(), p, nil); err != nil {
		t.Fatal(err)
	}
	rows := outboxRows(t, pool)
	if len(rows) != 1 {
		t.Fatalf("outbox rows = %d, want 1", len(rows))
	}
	ev := payment.Created{PaymentID: p.ID(), Amount: p.Amount(), PayerID: p.PayerID(), MerchantID: p.MerchantID(), At: p.CreatedAt()}
	doc, err := payments.EncodeEvent(rows[0].ID, ev, payments.TraceContext{})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatalf("EncodeEvent gave no JSON: %v\n%s", err, doc)
	}
	if !reflect.DeepEqual(got, rows[0].Payload) {
		t.Errorf("EncodeEvent =\n%s\nthe outbox holds\n%s", mustJSON(got), mustJSON(rows[0].Payload))
	}
}
