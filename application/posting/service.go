package posting

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// Disposition says what receiving a message did: applied, a duplicate,
// ignored, recorded for the processor, or parked. (Not a relay.Outcome, which
// is what a claimed outbox batch did.)
type Disposition int

// The dispositions of Apply and Record. Every one of them means "committed:
// acknowledge the message"; a message that must not be acknowledged comes back as an error.
const (
	// Applied: the message was new and its ledger transaction is posted.
	Applied Disposition = iota + 1
	// Duplicate: the message id was already in the inbox (a redelivery), or
	// its business fact was already posted under another message id. Nothing
	// changed in the ledger.
	Duplicate
	// Ignored: an event type this version does not handle. It is recorded in
	// the inbox, unapplied, so that a new event type never poisons an older
	// consumer and a later version can still find it.
	Ignored
	// Recorded: the message was new and is recorded in the inbox, pending,
	// for the inbox processor to apply (Record, the async mode).
	Recorded
	// Parked: the message was new and its posting can never apply as it is
	// (ledger.ErrBalanceLimit); it is recorded in the inbox parked, with the
	// reason, where inbox_parked_rows counts it and `ledger inbox retry`
	// finds it. Nothing was posted.
	Parked
)

// String names the disposition, for logs and metric labels.
func (o Disposition) String() string {
	switch o {
	case Applied:
		return "applied"
	case Duplicate:
		return "duplicate"
	case Ignored:
		return "ignored"
	case Recorded:
		return "recorded"
	case Parked:
		return "parked"
	default:
		return "unknown"
	}
}

// Result describes one message that Apply committed.
type Result struct {
	MessageID   string
	Type        string
	Disposition Disposition
	// EventTime is the event's own time (when the payments service recorded
	// the fact); zero if the event had none.
	EventTime time.Time
}

// Service runs the ledger's use cases.
type Service struct {
	tx      Transactor
	reader  Reader
	schemas Schemas
	now     func() time.Time
}

// NewService returns a Service writing through tx and reading through reader,
// which checks each event it posts against schemas. now is the clock, passed
// in so tests control it.
func NewService(tx Transactor, reader Reader, schemas Schemas, now func() time.Time) *Service {
	return &Service{tx: tx, reader: reader, schemas: schemas, now: now}
}

// Apply processes one message body in one database transaction: it records
// the message in the inbox and, if the inbox had not seen it, posts its
// ledger transaction. It returns only after the commit, so the caller may
// acknowledge the message exactly when err is nil. This is the inbox's sync
// mode (LEDGER_INBOX_MODE=sync).
//
// A posting the database refuses for good — an account's balance would
// pass what int64 holds — is not retried: a second transaction records the
// message in the inbox parked, with the reason, and Apply returns Parked, to
// be acknowledged like any committed disposition.
//
// Errors: ErrMalformed or ErrInvalidEvent for a message that will never
// apply, one its schema refuses included, or one of a type this version does
// not apply that is larger than MaxUnhandledSize (leave it for the DLQ);
// anything else is a transient failure (leave it for redelivery).
func (s *Service) Apply(ctx context.Context, body []byte) (Result, error) {
	return s.receive(ctx, body, true)
}

// Record is Apply's async counterpart (LEDGER_INBOX_MODE=async): it checks
// the message exactly as Apply does — so a message Apply would leave for the
// DLQ is refused here too and leaves nothing behind — but its transaction
// only records it in the inbox, pending, for the Processor to apply. It
// returns after the commit: the message is durable and may be acknowledged.
//
// Errors: as Apply's.
func (s *Service) Record(ctx context.Context, body []byte) (Result, error) {
	return s.receive(ctx, body, false)
}

func (s *Service) receive(ctx context.Context, body []byte, apply bool) (Result, error) {
	env, err := decodeEnvelope(body)
	if err != nil {
		return Result{}, err
	}
	res := Result{MessageID: env.id, Type: env.typ, EventTime: env.time}
	now := s.now()
	msg := InboxMessage{ID: env.id, Type: env.typ, Payload: body, ReceivedAt: now}

	var tx ledger.Transaction
	r, known := rules[env.typ]
	switch {
	case known:
		// Check the data before touching the database: an invalid event
		// must leave no inbox row, or its redelivery would look like a
		// duplicate and be acknowledged instead of reaching the DLQ.
		if tx, err = env.transaction(r, s.schemas); err != nil {
			return res, err
		}
		if apply {
			// The row is applied as of the commit that makes it visible, so
			// it is written processed: one statement instead of insert +
			// update.
			msg.ProcessedAt = now
		}
	case ignored[env.typ] != "":
		// A decision, not a gap: the row is done, in both modes. Left
		// pending it would wait for a version that never posts it, counted
		// as unhandled and kept from retention forever.
		msg.Error = fmt.Sprintf("event type %q is not posted: %s", env.typ, ignored[env.typ])
		msg.ProcessedAt = now
	default:
		// Kept whole and pending, for a version that applies the type; only
		// its size bounds what it keeps (MaxUnhandledSize), and only its
		// window how long (ExpireUnhandled).
		if len(body) > MaxUnhandledSize {
			return res, fmt.Errorf("%w: event type %q is not handled by this version, and the inbox keeps such a message only up to %d bytes: this one has %d",
				ErrMalformed, env.typ, MaxUnhandledSize, len(body))
		}
		msg.Error = fmt.Sprintf("event type %q is not handled by this version", env.typ)
	}

	err = s.tx.Transact(ctx, func(r Repos) error {
		inserted, err := r.Inbox.Insert(ctx, msg)
		if err != nil {
			return err
		}
		switch {
		case !inserted:
			res.Disposition = Duplicate
			return nil
		case !known:
			res.Disposition = Ignored
			return nil
		case !apply:
			res.Disposition = Recorded
			return nil
		}
		posted, err := r.Ledger.Post(ctx, tx, now)
		if err != nil {
			return err
		}
		if !posted {
			// Layer 2: the same business fact came under another message id.
			res.Disposition = Duplicate
			return r.Inbox.Annotate(ctx, env.id, noteAlreadyPosted)
		}
		res.Disposition = Applied
		return nil
	})
	if apply && errors.Is(err, ledger.ErrBalanceLimit) {
		return s.park(ctx, res, msg, err)
	}
	if err != nil {
		return Result{MessageID: env.id, Type: env.typ, EventTime: env.time}, fmt.Errorf("apply message %s: %w", env.id, err)
	}
	return res, nil
}

// park records msg in the inbox parked, with cause as its reason, in a
// transaction of its own: the one that tried to post it rolled back. A
// message another delivery recorded meanwhile is a duplicate, as in Apply.
// If this transaction fails too, the message is left for redelivery.
func (s *Service) park(ctx context.Context, res Result, msg InboxMessage, cause error) (Result, error) {
	msg.ProcessedAt, msg.ParkedAt, msg.Error = time.Time{}, msg.ReceivedAt, cause.Error()
	res.Disposition = Parked
	err := s.tx.Transact(ctx, func(r Repos) error {
		inserted, err := r.Inbox.Insert(ctx, msg)
		if err == nil && !inserted {
			res.Disposition = Duplicate
		}
		return err
	})
	if err != nil {
		return Result{MessageID: res.MessageID, Type: res.Type, EventTime: res.EventTime},
			fmt.Errorf("apply message %s: %w; parking it failed: %w", msg.ID, cause, err)
	}
	return res, nil
}

// noteAlreadyPosted is the inbox note of a message whose business fact was
// posted under another message id.
const noteAlreadyPosted = "business key already posted by another message"

// Balances returns the balances of the account named id, one per currency.
// id is the account's canonical name (ledger.ParseAccountID):
// "merchant:mer_1", "payer:mer_1:cus_1".
// Errors: ledger.ErrInvalidAccount, ledger.ErrAccountNotFound, ErrUnavailable.
func (s *Service) Balances(ctx context.Context, id string) ([]ledger.Balance, error) {
	account, err := ledger.ParseAccountID(id)
	if err != nil {
		return nil, err
	}
	return s.reader.Balances(ctx, account)
}

// Entries returns the ledger transactions of payment id with their entries.
// paymentID must be a canonical UUID (the HTTP adapter checks its syntax).
// Errors: ledger.ErrPaymentNotFound, ErrUnavailable.
func (s *Service) Entries(ctx context.Context, paymentID string) ([]ledger.Transaction, error) {
	return s.reader.PaymentTransactions(ctx, paymentID)
}
