package paymentstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// RunContract runs the behaviour every payments.Repository must have. Each
// implementation's tests call it with a constructor of a fresh, empty
// repository, so the in-memory fake cannot drift from the real one.
func RunContract(t *testing.T, newRepo func(t *testing.T) payments.Repository) {
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 12, 0, 0, 123_000_000, time.UTC)
	ids := 0
	newID := func() string {
		ids++
		return "00000000-0000-4000-8000-" + twelveDigits(ids)
	}
	newPayment := func(t *testing.T, minor int64) *payment.Payment {
		t.Helper()
		p, err := payment.New(payment.ID(newID()), minor, "BRL", "cus_1", "mer_1", "contract", at)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	refund := func(minor int64) (payment.RefundID, func(*payment.Payment) (payments.Change, error)) {
		id := payment.RefundID(newID())
		return id, func(p *payment.Payment) (payments.Change, error) {
			m, err := payment.NewMoney(minor, "BRL")
			if err != nil {
				return payments.Change{}, err
			}
			r, err := p.Refund(id, m, at.Add(time.Minute))
			if err != nil {
				return payments.Change{}, err
			}
			outbox, err := encode(p)
			return payments.Change{Refund: &r, Outbox: outbox}, err
		}
	}
	create := func(t *testing.T, repo payments.Repository, p *payment.Payment, key *idempotency.Key) (payments.Committed, error) {
		t.Helper()
		outbox, err := encode(p)
		if err != nil {
			t.Fatal(err)
		}
		return repo.Create(ctx, p, outbox, key)
	}

	t.Run("create then get", func(t *testing.T) {
		repo := newRepo(t)
		p := newPayment(t, 1050)
		want := p.Snapshot()
		out, err := create(t, repo, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out.Replayed || out.Payment.Snapshot() != want {
			t.Fatalf("outcome = %+v, want the new payment, not replayed", out)
		}
		got, err := repo.Get(ctx, p.ID())
		if err != nil {
			t.Fatal(err)
		}
		if got.Snapshot() != want {
			t.Errorf("got %+v, want %+v", got.Snapshot(), want)
		}
	})

	t.Run("unknown id is ErrNotFound", func(t *testing.T) {
		repo := newRepo(t)
		id := payment.ID(newID())
		if _, err := repo.Get(ctx, id); !errors.Is(err, payment.ErrNotFound) {
			t.Errorf("Get: err = %v, want ErrNotFound", err)
		}
		_, fn := refund(1)
		if _, err := repo.Update(ctx, id, nil, fn); !errors.Is(err, payment.ErrNotFound) {
			t.Errorf("Update: err = %v, want ErrNotFound", err)
		}
	})

	t.Run("update applies fn and returns the refund", func(t *testing.T) {
		repo := newRepo(t)
		p := newPayment(t, 1000)
		if _, err := create(t, repo, p, nil); err != nil {
			t.Fatal(err)
		}
		rid, fn := refund(400)
		out, err := repo.Update(ctx, p.ID(), nil, fn)
		if err != nil {
			t.Fatal(err)
		}
		if out.Refund == nil || out.Refund.ID != rid || out.Refund.Amount.Minor() != 400 {
			t.Fatalf("outcome refund = %+v, want %s of 400", out.Refund, rid)
		}
		got, err := repo.Get(ctx, p.ID())
		if err != nil {
			t.Fatal(err)
		}
		if got.RefundedMinor() != 400 || got.Status() != payment.StatusPartiallyRefunded {
			t.Errorf("got refunded %d status %q, want 400 partially_refunded", got.RefundedMinor(), got.Status())
		}
	})

	t.Run("a failing fn changes nothing", func(t *testing.T) {
		repo := newRepo(t)
		p := newPayment(t, 1000)
		if _, err := create(t, repo, p, nil); err != nil {
			t.Fatal(err)
		}
		_, fn := refund(1001)
		if _, err := repo.Update(ctx, p.ID(), nil, fn); !errors.Is(err, payment.ErrRefundExceedsAmount) {
			t.Fatalf("err = %v, want ErrRefundExceedsAmount", err)
		}
		got, err := repo.Get(ctx, p.ID())
		if err != nil {
			t.Fatal(err)
		}
		if got.RefundedMinor() != 0 || got.Status() != payment.StatusCreated {
			t.Errorf("got refunded %d status %q, want 0 created", got.RefundedMinor(), got.Status())
		}
	})

	t.Run("a manual payment's capture and cancel are stored", func(t *testing.T) {
		repo := newRepo(t)
		authorize := func() *payment.Payment {
			t.Helper()
			p, err := payment.Authorize(payment.ID(newID()), 2500, "BRL", "cus_1", "mer_1", "contract", time.Hour, at)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := create(t, repo, p, nil); err != nil {
				t.Fatal(err)
			}
			return p
		}
		apply := func(p *payment.Payment, change func(*payment.Payment) error) payment.Snapshot {
			t.Helper()
			out, err := repo.Update(ctx, p.ID(), nil, func(p *payment.Payment) (payments.Change, error) {
				if err := change(p); err != nil {
					return payments.Change{}, err
				}
				outbox, err := encode(p)
				return payments.Change{Outbox: outbox}, err
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := repo.Get(ctx, p.ID())
			if err != nil {
				t.Fatal(err)
			}
			if got.Snapshot() != out.Payment.Snapshot() {
				t.Errorf("read back %+v, want what the update committed, %+v", got.Snapshot(), out.Payment.Snapshot())
			}
			return got.Snapshot()
		}
		captured := apply(authorize(), func(p *payment.Payment) error {
			m, err := payment.NewMoney(2000, "BRL")
			if err != nil {
				return err
			}
			return p.Capture(m, at.Add(time.Minute))
		})
		if captured.Status != payment.StatusCaptured || captured.CapturedMinor != 2000 || !captured.CapturedAt.Equal(at.Add(time.Minute)) {
			t.Errorf("captured: %+v", captured)
		}
		canceled := apply(authorize(), func(p *payment.Payment) error { return p.Cancel(payment.CancelDuplicate, at.Add(time.Minute)) })
		if canceled.Status != payment.StatusCanceled || canceled.CancellationReason != payment.CancelDuplicate || !canceled.CanceledAt.Equal(at.Add(time.Minute)) {
			t.Errorf("canceled: %+v", canceled)
		}
	})

	t.Run("idempotency key replays the first outcome", func(t *testing.T) {
		repo := newRepo(t)
		key := &idempotency.Key{Merchant: "mer_1", Key: "k-" + newID(), Fingerprint: "f1"}
		p := newPayment(t, 1000)
		first, err := create(t, repo, p, key)
		if err != nil {
			t.Fatal(err)
		}
		again, err := create(t, repo, newPayment(t, 1000), key)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Replayed || again.Payment.Snapshot() != first.Payment.Snapshot() {
			t.Fatalf("retry = %+v, want replay of %+v", again.Payment.Snapshot(), first.Payment.Snapshot())
		}
		other := &idempotency.Key{Merchant: "mer_1", Key: key.Key, Fingerprint: "f2"}
		if _, err := create(t, repo, newPayment(t, 1000), other); !errors.Is(err, idempotency.ErrKeyReused) {
			t.Errorf("same key, other request: err = %v, want idempotency.ErrKeyReused", err)
		}

		// A refund's replay shows the payment as that refund left it, even
		// after later refunds changed it.
		rkey := &idempotency.Key{Merchant: "mer_1", Key: "r-" + newID(), Fingerprint: "r1"}
		rid, fn := refund(100)
		firstRefund, err := repo.Update(ctx, p.ID(), rkey, fn)
		if err != nil {
			t.Fatal(err)
		}
		_, fn2 := refund(200)
		if _, err := repo.Update(ctx, p.ID(), nil, fn2); err != nil {
			t.Fatal(err)
		}
		_, fn3 := refund(100)
		replay, err := repo.Update(ctx, p.ID(), rkey, fn3)
		if err != nil {
			t.Fatal(err)
		}
		if !replay.Replayed || replay.Refund == nil || replay.Refund.ID != rid ||
			replay.Payment.Snapshot() != firstRefund.Payment.Snapshot() {
			t.Fatalf("refund replay = %+v %+v, want the first refund's outcome", replay.Payment.Snapshot(), replay.Refund)
		}
		got, err := repo.Get(ctx, p.ID())
		if err != nil {
			t.Fatal(err)
		}
		if got.RefundedMinor() != 300 {
			t.Errorf("refunded = %d after a replayed refund, want 300 (the replay must not refund again)", got.RefundedMinor())
		}
	})

	t.Run("idempotency keys are per merchant", func(t *testing.T) {
		repo := newRepo(t)
		k1 := &idempotency.Key{Merchant: "mer_1", Key: "order-1", Fingerprint: "f1"}
		k2 := &idempotency.Key{Merchant: "mer_2", Key: "order-1", Fingerprint: "f2"}
		first, err := create(t, repo, newPayment(t, 100), k1)
		if err != nil {
			t.Fatal(err)
		}
		second, err := create(t, repo, newPayment(t, 200), k2)
		if err != nil {
			t.Fatalf("the same key for another merchant: %v, want a new payment", err)
		}
		if second.Replayed || second.Payment.ID() == first.Payment.ID() {
			t.Errorf("the other merchant's request got %+v, want its own new payment", second)
		}
		again, err := create(t, repo, newPayment(t, 100), k1)
		if err != nil || !again.Replayed || again.Payment.ID() != first.Payment.ID() {
			t.Errorf("the first merchant's retry: %+v %v, want its own replay", again, err)
		}
	})

	t.Run("list", func(t *testing.T) { listContract(t, newRepo) })
}

func twelveDigits(n int) string {
	const digits = "0123456789"
	b := []byte("000000000000")
	for i := len(b) - 1; i >= 0 && n > 0; i-- {
		b[i] = digits[n%10]
		n /= 10
	}
	return string(b)
}

// encode is what the use cases hand a repository for the events p recorded:
// one message each, encoded, as the contract's writes carry them.
func encode(p *payment.Payment) ([]outbox.Message, error) {
	var msgs []outbox.Message
	for _, e := range p.PullEvents() {
		id := uuid.Must(uuid.NewV7())
		payload, err := payments.EncodeEvent(id.String(), e, payments.TraceContext{})
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, outbox.Message{ID: id, Type: e.EventType(), AggregateID: uuid.MustParse(string(e.AggregateID())), Payload: payload})
	}
	return msgs, nil
}
