package paymentstest

import (
	"context"
	"slices"

	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// List implements payments.Repository by sorting every payment: what the
// Postgres index keeps in order, the fake computes, and the contract holds
// the two to the same answers.
func (r *FakeRepository) List(_ context.Context, q payments.PaymentQuery) ([]*payment.Payment, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var matched []payment.Snapshot
	for _, s := range r.payments {
		pos := payments.Position{CreatedAt: s.CreatedAt, ID: s.ID}
		switch {
		case s.MerchantID != q.MerchantID,
			q.Status != "" && s.Status != q.Status,
			!q.CreatedGTE.IsZero() && s.CreatedAt.Before(q.CreatedGTE),
			!q.CreatedLT.IsZero() && !s.CreatedAt.Before(q.CreatedLT),
			q.After != nil && !pos.Older(*q.After),
			q.Before != nil && !q.Before.Older(pos):
			continue
		}
		matched = append(matched, s)
	}
	slices.SortFunc(matched, func(a, b payment.Snapshot) int {
		pa, pb := payments.Position{CreatedAt: a.CreatedAt, ID: a.ID}, payments.Position{CreatedAt: b.CreatedAt, ID: b.ID}
		switch {
		case pb.Older(pa):
			return -1
		case pa.Older(pb):
			return 1
		}
		return 0
	})
	if len(matched) > q.Limit {
		if q.Before != nil {
			matched = matched[len(matched)-q.Limit:] // the nearest to Before are the oldest of those newer
		} else {
			matched = matched[:q.Limit]
		}
	}
	out := make([]*payment.Payment, 0, len(matched))
	for _, s := range matched {
		p, err := payment.Rehydrate(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
