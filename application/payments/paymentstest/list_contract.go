package paymentstest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// listContract is RunContract's part for Repository.List: the order, the
// keyset positions both ways, the filters and the merchant's scope.
func listContract(t *testing.T, newRepo func(t *testing.T) payments.Repository) {
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	repo := newRepo(t)
	// mer_1 has payments 1..6: two created in the same microsecond (3 and
	// 4), so that ids break the tie; 5 is partially refunded. mer_2 has one,
	// newer than all of them, which no list of mer_1 may show.
	type sample struct {
		n        int
		merchant string
		created  time.Time
	}
	samples := []sample{
		{1, "mer_1", at}, {2, "mer_1", at.Add(time.Second)}, {3, "mer_1", at.Add(2 * time.Second)},
		{4, "mer_1", at.Add(2 * time.Second)}, {5, "mer_1", at.Add(3 * time.Second)}, {6, "mer_1", at.Add(4 * time.Second)},
		{7, "mer_2", at.Add(5 * time.Second)},
	}
	id := func(n int) payment.ID { return payment.ID(fmt.Sprintf("00000000-0000-4000-8000-1%011d", n)) }
	for _, s := range samples {
		p, err := payment.New(id(s.n), 100, "BRL", "cus_1", s.merchant, "list", s.created)
		if err != nil {
			t.Fatal(err)
		}
		outbox, err := encode(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Create(ctx, p, outbox, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err := repo.Update(ctx, id(5), nil, func(p *payment.Payment) (payments.Change, error) {
		m, err := payment.NewMoney(10, "BRL")
		if err != nil {
			return payments.Change{}, err
		}
		r, err := p.Refund(payment.RefundID("00000000-0000-4000-8000-200000000005"), m, at.Add(time.Hour))
		if err != nil {
			return payments.Change{}, err
		}
		outbox, err := encode(p)
		return payments.Change{Refund: &r, Outbox: outbox}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	pos := func(n int) *payments.Position {
		for _, s := range samples {
			if s.n == n {
				return &payments.Position{CreatedAt: s.created, ID: id(n)}
			}
		}
		panic(n)
	}

	for _, c := range []struct {
		name string
		q    payments.PaymentQuery
		want []int
	}{
		{"newest first, ties by id", payments.PaymentQuery{MerchantID: "mer_1", Limit: 10}, []int{6, 5, 4, 3, 2, 1}},
		{"at most Limit", payments.PaymentQuery{MerchantID: "mer_1", Limit: 2}, []int{6, 5}},
		{"after a position", payments.PaymentQuery{MerchantID: "mer_1", Limit: 2, After: pos(4)}, []int{3, 2}},
		{"after a position, to the end", payments.PaymentQuery{MerchantID: "mer_1", Limit: 10, After: pos(2)}, []int{1}},
		{"before a position: the nearest", payments.PaymentQuery{MerchantID: "mer_1", Limit: 2, Before: pos(3)}, []int{5, 4}},
		{"before the newest: none", payments.PaymentQuery{MerchantID: "mer_1", Limit: 2, Before: pos(6)}, nil},
		{"by status", payments.PaymentQuery{MerchantID: "mer_1", Limit: 10, Status: payment.StatusPartiallyRefunded}, []int{5}},
		{"created in [gte, lt)", payments.PaymentQuery{MerchantID: "mer_1", Limit: 10, CreatedGTE: at.Add(time.Second), CreatedLT: at.Add(3 * time.Second)}, []int{4, 3, 2}},
		{"another merchant's", payments.PaymentQuery{MerchantID: "mer_2", Limit: 10}, []int{7}},
		{"a merchant without payments", payments.PaymentQuery{MerchantID: "mer_3", Limit: 10}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := repo.List(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs, wantIDs []payment.ID
			for _, p := range got {
				gotIDs = append(gotIDs, p.ID())
			}
			for _, n := range c.want {
				wantIDs = append(wantIDs, id(n))
			}
			if fmt.Sprint(gotIDs) != fmt.Sprint(wantIDs) {
				t.Errorf("got %v, want %v", gotIDs, wantIDs)
			}
		})
	}

	t.Run("a listed payment is what Get reads", func(t *testing.T) {
		got, err := repo.List(ctx, payments.PaymentQuery{MerchantID: "mer_1", Limit: 1, Status: payment.StatusPartiallyRefunded})
		if err != nil || len(got) != 1 {
			t.Fatalf("List: %v, %v", got, err)
		}
		read, err := repo.Get(ctx, id(5))
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Snapshot() != read.Snapshot() {
			t.Errorf("listed %+v, Get reads %+v", got[0].Snapshot(), read.Snapshot())
		}
	})
}
