package inbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// parking wraps the sync path (Inbox) for a message whose writes the
// database refuses for good (ErrPermanent: the ledger's balance taken past
// int64). Left unacknowledged, such a message would be refused on every
// redelivery until the queue moved it to the DLQ, as if it were malformed.
// Instead, once the transaction that tried it has rolled back, parking
// records the message parked, with the reason, in a transaction of its
// own, and the message is acknowledged: kept, counted (inbox_parked_rows),
// out of the processor's claims, until an operator retries it. In the
// async mode the processor parks such a row itself.
type parking[R any] struct {
	next  receiver
	store Recorder[R]
	now   func() time.Time
}

// Receive receives body with the wrapped receiver, and parks the message
// when that fails with ErrPermanent. A message another delivery recorded
// meanwhile is a duplicate. If parking fails too, the error names both
// failures and the message is left for redelivery.
func (p parking[R]) Receive(ctx context.Context, body []byte) (Result, error) {
	res, cause := p.next.Receive(ctx, body)
	if !errors.Is(cause, ErrPermanent) {
		return res, cause
	}
	now := p.now()
	msg := Message{ID: res.MessageID, Type: res.Type, Payload: body, ReceivedAt: now, ParkedAt: now, Error: cause.Error(), TraceID: res.TraceID}
	inserted, err := p.store.Record(ctx, msg, nil)
	if err = conflicting(&res, err); err != nil {
		return res, fmt.Errorf("%w; parking it failed: %w", cause, err)
	}
	res.Disposition = Parked
	if !inserted {
		res.Disposition = Duplicate
	}
	return res, nil
}
