package ledgerstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// TestNewKindNeedsNoMigration posts kinds the schema has never heard of, with
// and without a fact id, and reads them back; the rules of the two original
// kinds still hold in the database, whatever code writes to it.
func TestNewKindNeedsNoMigration(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, ledgermigrations.FS)
	store := ledgerstore.New(pool)
	ctx := context.Background()
	paymentID := uuid.NewString()
	post := func(kind ledger.Kind, factID string) (bool, error) {
		tx, err := ledger.NewTransfer(ledger.Posting{
			MessageID: uuid.NewString(), PaymentID: paymentID, Kind: kind, FactID: factID,
			Payer: "cus_k", Merchant: "mer_k", Amount: 100, Currency: "BRL", OccurredAt: time.Now(),
		}, ledger.Postings{Kind: kind, Debit: ledger.RoleMerchant, Credit: ledger.RolePayer})
		if err != nil {
			t.Fatal(err)
		}
		var posted bool
		_, err = store.Record(ctx, inboxMessage(tx), func(ctx context.Context, l ledgers.Ledger) (string, error) {
			posted, err = l.Post(ctx, tx, time.Now())
			return "", err
		})
		return posted, err
	}

	chargeback := uuid.NewString()
	for _, tt := range []struct {
		kind   ledger.Kind
		factID string
		want   bool
	}{
		{"charge_back", chargeback, true},
		{"charge_back", uuid.NewString(), true}, // another fact of the kind
		{"charge_back", chargeback, false},      // the same fact again: the business key
		{"capture", "", true},
		{"capture", "", false}, // a kind without a fact id posts once per payment
	} {
		posted, err := post(tt.kind, tt.factID)
		if err != nil || posted != tt.want {
			t.Errorf("post %s %q: got %v, %v; want %v", tt.kind, tt.factID, posted, err, tt.want)
		}
	}
	txs, err := store.PaymentTransactions(ctx, paymentID)
	if err != nil || len(txs) != 3 || txs[0].Kind() != "charge_back" || txs[0].FactID() != chargeback || txs[2].FactID() != "" {
		t.Errorf("read back: got %d transactions, %v", len(txs), err)
	}

	for _, tt := range []struct {
		kind   ledger.Kind
		factID string
	}{
		{"payment", uuid.NewString()}, // a payment posts once: it has no fact id
		{"refund", ""},                // a refund always names its refund
	} {
		if posted, err := post(tt.kind, tt.factID); err == nil {
			t.Errorf("post %s %q: got %v, nil; want the database to refuse it", tt.kind, tt.factID, posted)
		}
	}
}
