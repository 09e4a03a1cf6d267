package payments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/payments-outbox/payments-outbox/application/dependency"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// ExpiredAuthorizations lists the payments the expiry cancels: the ids of
// at most limit payments that are authorized with a capture_before at or
// before now, the earliest deadline first. It reads without locking: each
// id is re-checked under the payment's lock before it is canceled, so a
// list that is stale by the time it is used (another replica canceled the
// payment, or a capture came first) costs a lock, never a wrong cancel.
// Errors: dependency.ErrUnavailable.
type ExpiredAuthorizations func(ctx context.Context, now time.Time, limit int) ([]payment.ID, error)

// DefaultExpiryInterval is ExpiryConfig.Interval's default (cmd/payments
// passes it as its variable's default).
const DefaultExpiryInterval = time.Minute

// ExpiryConfig tunes an Expiry; its zero value means the defaults.
type ExpiryConfig struct {
	// Interval is the pause between sweeps, varied at random by up to a
	// tenth either way so that replicas started together do not sweep at
	// the same moment; 0 means DefaultExpiryInterval.
	Interval time.Duration
	// Batch is how many payments one listing returns; 0 means 100.
	Batch int
}

func (c ExpiryConfig) withDefaults() ExpiryConfig {
	if c.Interval <= 0 {
		c.Interval = DefaultExpiryInterval
	}
	if c.Batch <= 0 {
		c.Batch = 100
	}
	return c
}

// Expiry cancels authorizations that were not captured in time: each
// authorized payment past its capture_before is canceled with reason
// expired, through the service's one write path (Repository.Update), so its
// payment.canceled event leaves through the outbox like any other. It is safe
// to run on every replica at once: the state is re-checked inside the
// update, under the payment's row lock, so of two replicas that list the
// same payment one cancels it and the other finds it canceled and moves on.
type Expiry struct {
	svc  *Service
	list ExpiredAuthorizations
	log  *slog.Logger
	cfg  ExpiryConfig
}

// NewExpiry returns an Expiry that lists candidates with list and cancels
// them with svc.
func NewExpiry(svc *Service, list ExpiredAuthorizations, log *slog.Logger, cfg ExpiryConfig) *Expiry {
	return &Expiry{svc: svc, list: list, log: log, cfg: cfg.withDefaults()}
}

// errNoLongerExpired is what the update's function returns for a payment
// that the list named but that, under its lock, is no longer an expired
// authorization: nothing is written, and the sweep moves on.
var errNoLongerExpired = errors.New("no longer an expired authorization")

// Run sweeps at once and then every Interval until ctx ends, and returns nil
// then. A failed sweep is logged and retried at the next tick: a database
// outage must not stop the service, and the payments wait, still authorized
// and no longer capturable, until a sweep gets through.
func (e *Expiry) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		n, err := e.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			e.log.WarnContext(ctx, "authorization expiry failed; retrying at the next sweep", "canceled", n, "err", err)
		case n > 0:
			e.log.InfoContext(ctx, "expired authorizations canceled", "canceled", n)
		}
		jitter := time.Duration(rand.Int64N(int64(e.cfg.Interval)/5+1)) - e.cfg.Interval/10
		t.Reset(e.cfg.Interval + jitter)
	}
}

// Sweep cancels every authorization expired by now, a batch at a time, and
// returns how many it canceled, with the errors of those it could not. A
// payment whose cancel fails is passed over, so that one bad row at the head
// of the list cannot hold back every expiry behind it; a listing that fails,
// or an outage (dependency.ErrUnavailable), ends the sweep. It also ends
// after a batch in which it canceled nothing (what is left is failing, or
// some other replica's to take), and as soon as ctx ends.
func (e *Expiry) Sweep(ctx context.Context) (int, error) {
	total := 0
	var errs []error
	for ctx.Err() == nil {
		now := e.svc.now()
		ids, err := e.list(ctx, now, e.cfg.Batch)
		if err != nil {
			return total, errors.Join(append(errs, fmt.Errorf("list expired authorizations: %w", err))...)
		}
		canceled := 0
		for _, id := range ids {
			ok, err := e.svc.expire(ctx, id, now)
			if err != nil {
				errs = append(errs, fmt.Errorf("expire payment %s: %w", id, err))
				if errors.Is(err, dependency.ErrUnavailable) || ctx.Err() != nil {
					return total + canceled, errors.Join(errs...)
				}
				continue
			}
			if ok {
				canceled++
			}
		}
		total += canceled
		if len(ids) < e.cfg.Batch || canceled == 0 {
			return total, errors.Join(errs...)
		}
	}
	return total, errors.Join(append(errs, ctx.Err())...)
}

// expire cancels payment id with reason expired if, under its lock, it is an
// authorization past its capture_before at now, and reports whether it did.
func (s *Service) expire(ctx context.Context, id payment.ID, now time.Time) (bool, error) {
	_, err := s.update(ctx, id, nil, func(p *payment.Payment) (Change, error) {
		if !p.Expired(now) {
			return Change{}, errNoLongerExpired
		}
		return Change{}, p.Cancel(payment.CancelExpired, now)
	})
	switch {
	case errors.Is(err, errNoLongerExpired), errors.Is(err, payment.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}
