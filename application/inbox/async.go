package inbox

import (
	"context"
	"fmt"
	"time"
)

// async is the receive of the async mode: the sync path with the apply
// left to the Processor. It checks a message exactly as the sync path does,
// so that what it records is what the processor can apply and an invalid
// event still goes to the DLQ, then records it pending, alone in its
// transaction, and wakes the processor. The broker's acknowledgement
// follows the commit of the row, not of what applying it writes: accept
// fast now, apply later, with retries, backoff and parking (processor.go).
type async[R, E any] struct {
	store Recorder[R]
	c     *checker[R, E]
	wake  func()
	now   func() time.Time
}

// Receive records one message pending and returns Recorded, or Duplicate
// for a redelivery, after the commit. Its errors are those of
// Inbox.Receive, ErrPermanent excepted: nothing is applied here.
func (a async[R, E]) Receive(ctx context.Context, body []byte) (Result, error) {
	ev, err := Decode(body)
	if err != nil {
		return Result{}, err
	}
	res := Result{MessageID: ev.ID, Type: ev.Type, EventTime: ev.Time, TraceID: ev.TraceID()}
	if _, err := a.c.check(ev); err != nil {
		return res, err
	}
	inserted, err := a.store.Record(ctx, Message{ID: ev.ID, Type: ev.Type, Payload: body, ReceivedAt: a.now(), TraceID: res.TraceID}, nil)
	if err = conflicting(&res, err); err != nil {
		return res, fmt.Errorf("record message %s: %w", ev.ID, err)
	}
	res.Disposition = Duplicate
	if inserted {
		res.Disposition = Recorded
		a.wake()
	}
	return res, nil
}
