package ledgerstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// TestReconcileComparesAccounts: reconcile reads each fact's parties from
// the payments database and the entries the ledger posted for it, and
// holds them to the kind's postings. A payment posted the wrong way round
// (a posting built by hand, not by its declaration) and one posted to a
// payer the payments database does not name are divergences, though their
// kind, amount and currency match.
func TestReconcileComparesAccounts(t *testing.T) {
	t.Parallel()
	svc, store, _ := newService(t)
	payments := pgtest.New(t, paymentsmigrations.FS)
	ctx := context.Background()
	rec := ledgers.NewReconciler(ledgerstore.NewPaymentsDB(payments), store, time.Now)
	reconcile := func() []ledgers.Divergence {
		t.Helper()
		divs, err := rec.Reconcile(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return divs
	}

	paid := newPayment(1000, "cus_r", "mer_r")
	refund := paid.refund(300, 300)
	insertPayment(t, payments, paid)
	insertRefund(t, payments, refund)
	for _, e := range []event{paid, refund} {
		if _, err := svc.Apply(ctx, e.body()); err != nil {
			t.Fatal(err)
		}
	}
	if divs := reconcile(); len(divs) != 0 {
		t.Fatalf("a payment and its refund, posted by their declarations: got %v, want no divergence", divs)
	}

	// The wrong way round: the merchant debited, the payer credited.
	swapped := newPayment(500, "cus_r", "mer_r")
	insertPayment(t, payments, swapped)
	tx, err := ledger.NewTransfer(ledger.Posting{MessageID: swapped.id, PaymentID: swapped.paymentID, Merchant: "mer_r", Payer: "cus_r",
		Amount: 500, Currency: "BRL", OccurredAt: swapped.at}, ledger.Postings{Kind: "payment", Debit: ledger.RoleMerchant, Credit: ledger.RolePayer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Record(ctx, inboxMessage(tx), func(ctx context.Context, l ledgers.Ledger) (string, error) {
		_, err := l.Post(ctx, tx, time.Now())
		return "", err
	}); err != nil {
		t.Fatal(err)
	}
	// Another payer's account: the event names a payer the payments
	// database does not.
	elsewhere := newPayment(700, "cus_r", "mer_r")
	insertPayment(t, payments, elsewhere)
	elsewhere.payer = "cus_other"
	if _, err := svc.Apply(ctx, elsewhere.body()); err != nil {
		t.Fatal(err)
	}

	divs := reconcile()
	if len(divs) != 2 {
		t.Fatalf("got %d divergences %v, want 2: the payment posted the wrong way and the one posted to another payer", len(divs), divs)
	}
	for _, want := range []struct{ paymentID, posted string }{
		{swapped.paymentID, "ledger posted merchant:mer_r -500 BRL, payer:mer_r:cus_r +500 BRL"},
		{elsewhere.paymentID, "ledger posted merchant:mer_r +700 BRL, payer:mer_r:cus_other -700 BRL"},
	} {
		found := false
		for _, d := range divs {
			found = found || strings.Contains(d.String(), want.paymentID) && strings.Contains(d.String(), want.posted)
		}
		if !found {
			t.Errorf("no divergence of payment %s saying %q: got %v", want.paymentID, want.posted, divs)
		}
	}
}
