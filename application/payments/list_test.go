package payments_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/payments/paymentstest"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// newListed returns a service whose clock moves a second per payment, with
// n payments of mer_1 and one of mer_2 created through it, mer_1's ids
// oldest first.
func newListed(t *testing.T, n int) (*payments.Service, []payment.ID) {
	t.Helper()
	clock := t0
	ids := 0
	svc := payments.NewService(paymentstest.NewFakeRepository(), func() time.Time {
		clock = clock.Add(time.Second)
		return clock
	}, func() string {
		ids++
		return "00000000-0000-4000-8000-" + twelve(ids)
	}, payments.Config{})
	var out []payment.ID
	for range n {
		c, err := svc.Create(context.Background(), payments.CreatePayment{Principal: mer1, Amount: 100, Currency: "BRL", PayerID: "cus_1"})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.Payment.ID())
	}
	if _, err := svc.Create(context.Background(), payments.CreatePayment{Principal: mer2, Amount: 100, Currency: "BRL", PayerID: "cus_1"}); err != nil {
		t.Fatal(err)
	}
	return svc, out
}

func twelve(n int) string {
	b := []byte("000000000000")
	for i := len(b) - 1; n > 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b)
}

func ids(p payments.Page) []payment.ID {
	var out []payment.ID
	for _, x := range p.Payments {
		out = append(out, x.ID())
	}
	return out
}

func TestListPagesBothWays(t *testing.T) {
	ctx := context.Background()
	svc, created := newListed(t, 5) // created[4] is the newest
	first, err := svc.List(ctx, payments.ListPayments{Principal: mer1, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(first); len(got) != 2 || got[0] != created[4] || got[1] != created[3] || !first.HasMore {
		t.Fatalf("first page %v has_more %v, want [%s %s] true", got, first.HasMore, created[4], created[3])
	}
	next, err := svc.List(ctx, payments.ListPayments{Principal: mer1, Limit: 2, StartingAfter: created[1]})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(next); len(got) != 1 || got[0] != created[0] || next.HasMore {
		t.Fatalf("last page %v has_more %v, want [%s] false", got, next.HasMore, created[0])
	}
	back, err := svc.List(ctx, payments.ListPayments{Principal: mer1, Limit: 2, EndingBefore: created[1]})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(back); len(got) != 2 || got[0] != created[3] || got[1] != created[2] || !back.HasMore {
		t.Fatalf("page before %s: %v has_more %v, want [%s %s] true", created[1], got, back.HasMore, created[3], created[2])
	}
	all, err := svc.List(ctx, payments.ListPayments{Principal: platform, MerchantID: "mer_1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Payments) != 5 || all.HasMore {
		t.Errorf("the platform's list of mer_1: %v has_more %v, want the 5 of mer_1", ids(all), all.HasMore)
	}
}

func TestListRefuses(t *testing.T) {
	ctx := context.Background()
	svc, created := newListed(t, 2)
	other, err := svc.List(ctx, payments.ListPayments{Principal: mer2})
	if err != nil || len(other.Payments) != 1 {
		t.Fatalf("mer_2's list: %v %v, want its one payment", ids(other), err)
	}
	mer2Payment := other.Payments[0].ID()
	for _, c := range []struct {
		name string
		l    payments.ListPayments
		want error
	}{
		{"limit 0 is the default, -1 is refused", payments.ListPayments{Principal: mer1, Limit: -1}, payments.ErrInvalidListQuery},
		{"limit over the maximum", payments.ListPayments{Principal: mer1, Limit: payments.MaxListLimit + 1}, payments.ErrInvalidListQuery},
		{"both cursors", payments.ListPayments{Principal: mer1, StartingAfter: created[0], EndingBefore: created[1]}, payments.ErrInvalidListQuery},
		{"an empty time range", payments.ListPayments{Principal: mer1, CreatedGTE: t0, CreatedLT: t0}, payments.ErrInvalidListQuery},
		{"another merchant named by a merchant", payments.ListPayments{Principal: mer1, MerchantID: "mer_2"}, payments.ErrInvalidListQuery},
		{"the platform names no merchant", payments.ListPayments{Principal: platform}, payments.ErrInvalidListQuery},
		{"the platform names a merchant with NUL", payments.ListPayments{Principal: platform, MerchantID: "mer_1\x00"}, payments.ErrInvalidListQuery},
		{"the platform names a merchant not UTF-8", payments.ListPayments{Principal: platform, MerchantID: "mer_\xff"}, payments.ErrInvalidListQuery},
		{"an unknown cursor", payments.ListPayments{Principal: mer1, StartingAfter: "00000000-0000-4000-8000-999999999999"}, payments.ErrUnknownCursor},
		{"another merchant's payment as the cursor", payments.ListPayments{Principal: mer1, StartingAfter: mer2Payment}, payments.ErrUnknownCursor},
		{"another merchant's payment as the cursor, by the platform", payments.ListPayments{Principal: platform, MerchantID: "mer_1", EndingBefore: mer2Payment}, payments.ErrUnknownCursor},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := svc.List(ctx, c.l); !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
	def, err := svc.List(ctx, payments.ListPayments{Principal: mer1, Limit: 0})
	if err != nil || len(def.Payments) != 2 {
		t.Errorf("limit 0: %v %v, want the default page", ids(def), err)
	}
}

// TestListBoundsAreWholeMicroseconds: payments are created at whole
// microseconds, and a store may round a finer bound either way (Postgres
// rounds to the nearest), so the use case hands it bounds rounded up, which
// keep exactly the payments the finer ones say.
func TestListBoundsAreWholeMicroseconds(t *testing.T) {
	repo := &recordingLister{FakeRepository: paymentstest.NewFakeRepository()}
	svc := payments.NewService(repo, func() time.Time { return t0 }, func() string { return "00000000-0000-4000-8000-000000000001" }, payments.Config{})
	at := t0.Add(1500 * time.Nanosecond) // 1.5 µs after t0
	if _, err := svc.List(context.Background(), payments.ListPayments{Principal: mer1, CreatedGTE: at, CreatedLT: at.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	want := t0.Add(2 * time.Microsecond)
	if !repo.q.CreatedGTE.Equal(want) || !repo.q.CreatedLT.Equal(want.Add(time.Hour)) {
		t.Errorf("the store got [%s, %s), want [%s, %s)", repo.q.CreatedGTE, repo.q.CreatedLT, want, want.Add(time.Hour))
	}
}

type recordingLister struct {
	*paymentstest.FakeRepository
	q payments.PaymentQuery
}

func (r *recordingLister) List(ctx context.Context, q payments.PaymentQuery) ([]*payment.Payment, error) {
	r.q = q
	return r.FakeRepository.List(ctx, q)
}
