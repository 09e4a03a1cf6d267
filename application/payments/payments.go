// Package payments holds the payments service's use cases — create (or
// authorize), get, capture, cancel and refund a payment, and the expiry of
// authorizations (expiry.go) — the ports they need, and the wire form of the events
// they publish (events.go). It knows nothing of HTTP or SQL: each use case
// encodes the events its write records and hands the repository the bytes,
// and the repository port hides the transaction in which the change and
// those outbox rows are committed together.
//
// Every use case takes the access.Principal it acts as and applies the
// scoping rule: a merchant key acts for its merchant only, the platform's
// key for any. Another merchant's payment is reported as not found, exactly
// like a payment that does not exist.
package payments

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// ErrAmountLimit means a payment's amount is over the deployment's limit
// (Config.MaxAmount): a valid amount of money, which this service is
// configured not to take.
var ErrAmountLimit = errors.New("amount exceeds the limit")

// DefaultMaxAmount is the largest amount a payment may have, in minor units,
// unless Config says otherwise: 9,999,999,999.99 in a currency of two
// decimals. The events' schemas allow the whole int64 range; a limit is each
// deployment's policy, and a lower one keeps a typo or a forged request from
// moving sums no merchant moves.
const DefaultMaxAmount int64 = 999_999_999_999

// Committed is what a write committed: the payment as of that commit and,
// for a refund, the refund. Replayed is true when it was not written now but
// read back for a retry carrying the same idempotency key: what the first
// request committed, which the retry is answered with.
type Committed struct {
	Payment  *payment.Payment
	Refund   *payment.Refund
	Replayed bool
}

// Repository stores payments. Every write commits the state change, the
// outbox messages of the events it recorded, and the idempotency key (when
// given) in ONE transaction: either all of them exist afterwards or none
// does. The use cases encode the messages (EncodeEvent); the repository
// stores their bytes as they are, and the relay publishes them unchanged.
type Repository interface {
	// Create stores the new payment p and msgs, the outbox messages of the
	// events p recorded. With a key it first looks the key up: a completed one with
	// the same fingerprint returns what it committed, with Replayed set, and
	// stores nothing. Errors: idempotency.ErrKeyReused, ErrKeyInFlight (a
	// twin holds the key), dependency.ErrUnavailable.
	Create(ctx context.Context, p *payment.Payment, msgs []outbox.Message, key *idempotency.Key) (Committed, error)
	// Update locks payment id, calls fn with it, and commits the new state
	// together with the Change fn returns: the refund it made, if any, and
	// the messages of the events it recorded. fn runs inside the transaction,
	// holding the payment's lock, so it must do no I/O. Key handling is as
	// for Create. Errors: payment.ErrNotFound, whatever fn returns,
	// idempotency.ErrKeyReused, ErrKeyInFlight, dependency.ErrUnavailable.
	Update(ctx context.Context, id payment.ID, key *idempotency.Key, fn func(*payment.Payment) (Change, error)) (Committed, error)
	// Get returns the payment with id. Errors: payment.ErrNotFound,
	// dependency.ErrUnavailable.
	Get(ctx context.Context, id payment.ID) (*payment.Payment, error)
	// List returns at most q.Limit of q.MerchantID's payments that match
	// q's filters, newest first (created_at, then id, descending): those
	// older than q.After, or the q.Limit nearest to q.Before among those
	// newer than it, or the newest. Errors: dependency.ErrUnavailable.
	List(ctx context.Context, q PaymentQuery) ([]*payment.Payment, error)
}

// Change is what an update commits beside the payment's new state.
type Change struct {
	// Refund is the refund the update made, stored with the payment; nil
	// when it made none.
	Refund *payment.Refund
	// Outbox holds the messages of the events the update recorded, in the
	// order it recorded them.
	Outbox []outbox.Message
}

// TraceContextFunc returns the trace context of the call ctx belongs to, or
// the zero TraceContext when it is not traced: the port through which the
// events a write records learn the trace they continue.
// adapters/paymentstracing implements it (TraceContext); the application
// knows nothing of OpenTelemetry.
type TraceContextFunc func(ctx context.Context) TraceContext

// DefaultAuthorizationTTL is how long a manual payment stays authorized,
// capturable, unless Config says otherwise: seven days, as card networks
// commonly hold an authorization.
const DefaultAuthorizationTTL = 7 * 24 * time.Hour

// Config is what a Service may be given beyond its dependencies; the zero
// Config is a service that does not trace and holds authorizations for
// DefaultAuthorizationTTL.
type Config struct {
	// TraceContext is read once per write, before it: each of the write's
	// events carries it. Nil: the events carry none.
	TraceContext TraceContextFunc
	// AuthorizationTTL is how long after its creation a manual payment can be
	// captured (its capture_before); 0 means DefaultAuthorizationTTL.
	AuthorizationTTL time.Duration
	// MaxAmount is the largest amount a payment may be created with;
	// 0 means DefaultMaxAmount.
	MaxAmount int64
}

func (c Config) withDefaults() Config {
	if c.TraceContext == nil {
		c.TraceContext = func(context.Context) TraceContext { return TraceContext{} }
	}
	if c.AuthorizationTTL <= 0 {
		c.AuthorizationTTL = DefaultAuthorizationTTL
	}
	if c.MaxAmount <= 0 {
		c.MaxAmount = DefaultMaxAmount
	}
	return c
}

// Service runs the use cases.
type Service struct {
	repo             Repository
	now              func() time.Time
	newID            func() string
	traceContext     TraceContextFunc
	authorizationTTL time.Duration
	maxAmount        int64
}

// NewService returns a Service. now is the clock and newID makes UUIDs for new
// payments and refunds; both are injected so tests are deterministic.
func NewService(repo Repository, now func() time.Time, newID func() string, cfg Config) *Service {
	cfg = cfg.withDefaults()
	// Timestamps are kept to the microsecond, the precision Postgres stores, so
	// a payment reads back exactly as the response that created it showed it.
	micro := func() time.Time { return now().UTC().Truncate(time.Microsecond) }
	return &Service{repo: repo, now: micro, newID: newID, traceContext: cfg.TraceContext, authorizationTTL: cfg.AuthorizationTTL, maxAmount: cfg.MaxAmount}
}

// CreatePayment is the input of Create.
type CreatePayment struct {
	// Principal is who asks. A merchant creates payments to itself: an
	// empty MerchantID means its own, and another is refused. The platform
	// names the merchant.
	Principal   access.Principal
	Amount      int64
	Currency    string
	PayerID     string
	MerchantID  string
	Description string
	// CaptureMethod is automatic (the payment moves its money as it is
	// created) or manual (it is only authorized, and captured later); empty
	// means automatic.
	CaptureMethod string
	// IdempotencyKey is optional; empty means none.
	IdempotencyKey string
}

// Create creates a payment — with capture method manual, authorizes it — or
// replays what an earlier request with the same idempotency key by the same
// merchant committed. Errors: payment.ErrInvalid
// (a *payment.ValidationError, which names merchant_id when a merchant key
// names another merchant), ErrAmountLimit, idempotency.ErrInvalidKey,
// ErrKeyReused, ErrKeyInFlight, access.ErrUnauthenticated.
func (s *Service) Create(ctx context.Context, c CreatePayment) (Committed, error) {
	if !c.Principal.Valid() {
		return Committed{}, access.ErrUnauthenticated
	}
	if !c.Principal.IsPlatform() {
		switch c.MerchantID {
		case "":
			c.MerchantID = c.Principal.Merchant()
		case c.Principal.Merchant():
		default:
			return Committed{}, &payment.ValidationError{Problems: []payment.FieldProblem{
				{Field: "merchant_id", Detail: "must be the API key's own merchant, or left out"},
			}}
		}
	}
	if c.CaptureMethod == "" {
		c.CaptureMethod = string(payment.CaptureAutomatic)
	}
	method := payment.CaptureMethod(c.CaptureMethod)
	// Fingerprinted with its defaults filled in and its currency's case
	// dropped, so that requests asking for the same payment are retries of
	// each other. Only the fingerprint's copy is upper-cased: the domain
	// checks the currency as it was sent (money.ParseCurrency).
	fingerprinted := c
	fingerprinted.Currency = strings.ToUpper(c.Currency)
	key, err := idempotencyKey(c.MerchantID, c.IdempotencyKey, fingerprinted)
	if err != nil {
		return Committed{}, err
	}
	var p *payment.Payment
	switch method {
	case payment.CaptureAutomatic:
		p, err = payment.New(payment.ID(s.newID()), c.Amount, c.Currency, c.PayerID, c.MerchantID, c.Description, s.now())
	case payment.CaptureManual:
		p, err = payment.Authorize(payment.ID(s.newID()), c.Amount, c.Currency, c.PayerID, c.MerchantID, c.Description, s.authorizationTTL, s.now())
	default:
		err = &payment.ValidationError{Problems: []payment.FieldProblem{
			{Field: "capture_method", Detail: "must be automatic or manual"},
		}}
	}
	if err != nil {
		return Committed{}, err
	}
	// Checked once the payment is valid, so that a request with other
	// faults lists them all first; a capture or refund is bounded by
	// the payment's amount, so creating is the one place to check.
	if p.Amount().Minor() > s.maxAmount {
		return Committed{}, fmt.Errorf("%w: %d is over %d (minor units)", ErrAmountLimit, p.Amount().Minor(), s.maxAmount)
	}
	msgs, err := outboxMessages(p.PullEvents(), s.traceContext(ctx))
	if err != nil {
		return Committed{}, err
	}
	return s.repo.Create(ctx, p, msgs, key)
}

// Get returns the payment with id if who may see it. Errors:
// payment.ErrNotFound, for another merchant's payment too,
// access.ErrUnauthenticated.
func (s *Service) Get(ctx context.Context, who access.Principal, id payment.ID) (*payment.Payment, error) {
	if !who.Valid() {
		return nil, access.ErrUnauthenticated
	}
	p, err := s.repo.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !who.ActsFor(p.MerchantID()) {
		return nil, fmt.Errorf("%w: %s", payment.ErrNotFound, id)
	}
	return p, nil
}

// RefundPayment is the input of Refund. It is named for the command, as
// CreatePayment is, so it is not mistaken for payment.Refund, the refund a
// payment records.
type RefundPayment struct {
	Principal      access.Principal
	PaymentID      payment.ID
	Amount         int64
	IdempotencyKey string
}

// Refund refunds part or all of a payment. The repository holds the payment's
// row lock while the domain checks the refundable amount, so concurrent
// refunds can never exceed it. A merchant can refund only its own payments;
// the idempotency key is scoped to the payment's merchant. Errors:
// payment.ErrNotFound (for another merchant's payment too),
// payment.ErrRefundExceedsAmount, payment.ErrInvalid, the key errors,
// access.ErrUnauthenticated.
func (s *Service) Refund(ctx context.Context, c RefundPayment) (Committed, error) {
	if !c.Principal.Valid() {
		return Committed{}, access.ErrUnauthenticated
	}
	key, err := s.changeKey(ctx, c.Principal, c.PaymentID, c.IdempotencyKey, c)
	if err != nil {
		return Committed{}, err
	}
	if c.Amount <= 0 {
		return Committed{}, &payment.ValidationError{Problems: []payment.FieldProblem{
			{Field: "amount", Detail: "must be an integer greater than zero (minor units)"},
		}}
	}
	refundID := payment.RefundID(s.newID())
	now := s.now()
	return s.update(ctx, c.PaymentID, key, func(p *payment.Payment) (Change, error) {
		if err := actsFor(c.Principal, p); err != nil {
			return Change{}, err
		}
		amount, err := payment.NewMoney(c.Amount, p.Amount().Currency())
		if err != nil {
			return Change{}, err
		}
		refund, err := p.Refund(refundID, amount, now)
		if err != nil {
			return Change{}, err
		}
		return Change{Refund: &refund}, nil
	})
}

// CapturePayment is the input of Capture.
type CapturePayment struct {
	Principal access.Principal
	PaymentID payment.ID
	// Amount is the amount to capture, at most the authorized amount; 0
	// means the whole authorized amount.
	Amount         int64
	IdempotencyKey string
}

// Capture captures an authorized payment, in full or in part: the captured
// amount moves to the merchant and the rest of the authorization is
// released. A payment is captured once. Scoping and the idempotency key are
// as for Refund. Errors: payment.ErrNotFound (for another merchant's payment
// too), payment.ErrInvalidTransition (the payment is not authorized),
// payment.ErrAuthorizationExpired, payment.ErrCaptureExceedsAmount,
// payment.ErrInvalid, the key errors, access.ErrUnauthenticated.
func (s *Service) Capture(ctx context.Context, c CapturePayment) (Committed, error) {
	if !c.Principal.Valid() {
		return Committed{}, access.ErrUnauthenticated
	}
	key, err := s.changeKey(ctx, c.Principal, c.PaymentID, c.IdempotencyKey, c)
	if err != nil {
		return Committed{}, err
	}
	if c.Amount < 0 {
		return Committed{}, &payment.ValidationError{Problems: []payment.FieldProblem{
			{Field: "amount", Detail: "must be an integer greater than zero (minor units), or left out for the whole amount"},
		}}
	}
	now := s.now()
	return s.update(ctx, c.PaymentID, key, func(p *payment.Payment) (Change, error) {
		if err := actsFor(c.Principal, p); err != nil {
			return Change{}, err
		}
		amount := p.Amount()
		if c.Amount != 0 {
			var err error
			if amount, err = payment.NewMoney(c.Amount, amount.Currency()); err != nil {
				return Change{}, err
			}
		}
		return Change{}, p.Capture(amount, now)
	})
}

// CancelPayment is the input of Cancel.
type CancelPayment struct {
	Principal access.Principal
	PaymentID payment.ID
	// CancellationReason is requested_by_customer, duplicate, fraudulent or
	// abandoned; empty means requested_by_customer. Expired is the
	// service's own, and refused.
	CancellationReason string
	IdempotencyKey     string
}

// Cancel cancels an authorized payment: its whole authorization is released
// and no money moves. Scoping and the idempotency key are as for Refund.
// Errors: payment.ErrNotFound (for another merchant's payment too),
// payment.ErrInvalidTransition (the payment is not authorized),
// payment.ErrInvalid (a reason a client may not give), the key errors,
// access.ErrUnauthenticated.
func (s *Service) Cancel(ctx context.Context, c CancelPayment) (Committed, error) {
	if !c.Principal.Valid() {
		return Committed{}, access.ErrUnauthenticated
	}
	key, err := s.changeKey(ctx, c.Principal, c.PaymentID, c.IdempotencyKey, c)
	if err != nil {
		return Committed{}, err
	}
	reason := payment.CancellationReason(c.CancellationReason)
	switch reason {
	case "":
		reason = payment.CancelRequestedByCustomer
	case payment.CancelRequestedByCustomer, payment.CancelDuplicate, payment.CancelFraudulent, payment.CancelAbandoned:
	default:
		return Committed{}, &payment.ValidationError{Problems: []payment.FieldProblem{
			{Field: "cancellation_reason", Detail: "must be requested_by_customer, duplicate, fraudulent or abandoned"},
		}}
	}
	now := s.now()
	return s.update(ctx, c.PaymentID, key, func(p *payment.Payment) (Change, error) {
		if err := actsFor(c.Principal, p); err != nil {
			return Change{}, err
		}
		return Change{}, p.Cancel(reason, now)
	})
}

// changeKey is the idempotency key of req, a request that changes payment
// id, scoped to the payment's merchant: a merchant's key is its own, and the
// platform's key is scoped to the payment's merchant, which only the payment
// knows — it never changes, so reading it first is safe.
func (s *Service) changeKey(ctx context.Context, who access.Principal, id payment.ID, key string, req any) (*idempotency.Key, error) {
	merchant := who.Merchant()
	if who.IsPlatform() && key != "" {
		p, err := s.repo.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		merchant = p.MerchantID()
	}
	return idempotencyKey(merchant, key, req)
}

// actsFor reports another merchant's payment as not found, exactly like a
// payment that does not exist.
func actsFor(who access.Principal, p *payment.Payment) error {
	if !who.ActsFor(p.MerchantID()) {
		return fmt.Errorf("%w: %s", payment.ErrNotFound, p.ID())
	}
	return nil
}

// update is how every use case changes a payment: it runs fn on payment id
// under the repository's lock and commits the Change fn returns with the
// events fn recorded, encoded here, so that no use case can commit a change
// and leave its events behind. fn must do no I/O (Repository.Update).
func (s *Service) update(ctx context.Context, id payment.ID, key *idempotency.Key, fn func(*payment.Payment) (Change, error)) (Committed, error) {
	tc := s.traceContext(ctx)
	return s.repo.Update(ctx, id, key, func(p *payment.Payment) (Change, error) {
		c, err := fn(p)
		if err != nil {
			return Change{}, err
		}
		if c.Outbox, err = outboxMessages(p.PullEvents(), tc); err != nil {
			return Change{}, err
		}
		return c, nil
	})
}
