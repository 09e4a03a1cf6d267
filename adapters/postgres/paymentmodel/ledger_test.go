package paymentmodel_test

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// balance is an account's balance in the ledger's terms: what was posted
// to it, and, for a merchant, what is held for it.
type balance struct{ posted, pending int64 }

// checkLedger holds the ledger, once the outbox is drained, to what the
// payments database implies, read from its rows, not from the model: each
// merchant has been paid what its payments captured less what they
// refunded, and is owed the authorizations still held; each payer, as its
// merchant knows it, the opposite of what it paid; no payer has been given
// back more than it paid. The model's amounts must imply the same.
func (w *world) checkLedger() {
	w.t.Helper()
	rows, err := w.payDB.Query(w.ctx, `SELECT merchant_id, payer_id,
			sum(amount_captured - refunded_amount),
			sum(CASE WHEN status = 'authorized' THEN amount ELSE 0 END)
		FROM payments GROUP BY merchant_id, payer_id`)
	if err != nil {
		w.fatalf("read the payments' sums: %v", err)
	}
	merchantWant, payerWant := map[string]balance{}, map[[2]string]int64{}
	for rows.Next() {
		var merchant, payer string
		var paid, held int64
		if err := rows.Scan(&merchant, &payer, &paid, &held); err != nil {
			w.fatalf("read the payments' sums: %v", err)
		}
		b := merchantWant[merchant]
		b.posted += paid
		b.pending += held
		merchantWant[merchant] = b
		payerWant[[2]string{merchant, payer}] = -paid
	}
	if err := rows.Err(); err != nil {
		w.fatalf("read the payments' sums: %v", err)
	}

	modelWant := map[string]balance{}
	for _, id := range w.model.order {
		p := w.model.payments[id]
		b := modelWant[p.merchant]
		b.posted += p.captured - p.refunded
		if p.status == "authorized" {
			b.pending += p.amount
		}
		modelWant[p.merchant] = b
	}

	for _, m := range merchants {
		want := merchantWant[m]
		if modelWant[m] != want {
			w.fatalf("merchant %s: the payments database implies %+v, the model %+v", m, want, modelWant[m])
		}
		got := w.ledgerBalance(m, true)
		if got != want {
			w.fatalf("merchant %s: the ledger has posted %d and holds %d; the payments database implies %d posted and %d held",
				m, got.posted, got.pending, want.posted, want.pending)
		}
	}
	for mp, want := range payerWant {
		account, err := ledger.PayerAccount(mp[0], mp[1])
		if err != nil {
			w.fatalf("payer %v: %v", mp, err)
		}
		got := w.ledgerBalance(account.String(), false)
		if got.posted != want {
			w.fatalf("payer %s: the ledger has posted %d, the payments database implies %d", account, got.posted, want)
		}
		if got.posted > 0 {
			w.fatalf("payer %s was given back %d more than it paid", account, got.posted)
		}
	}
}

// ledgerBalance reads a merchant's balances (merchant true, by merchant id)
// or an account's (by its name) in BRL; an account the ledger never posted
// to has none.
func (w *world) ledgerBalance(id string, merchant bool) balance {
	w.t.Helper()
	var (
		bs  []ledger.Balance
		err error
	)
	if merchant {
		bs, err = w.books.MerchantBalances(w.ctx, id, time.Time{})
	} else {
		bs, err = w.books.Balances(w.ctx, id)
	}
	switch {
	case errors.Is(err, ledger.ErrAccountNotFound), errors.Is(err, pgx.ErrNoRows):
		return balance{}
	case err != nil:
		w.fatalf("the ledger's balances of %s: %v", id, err)
	}
	var out balance
	for _, b := range bs {
		if b.Currency() != "BRL" {
			w.fatalf("%s has a balance in %s; every payment of the run is in BRL", id, b.Currency())
		}
		out.posted += b.Posted()
		out.pending += b.Pending()
	}
	return out
}
