package payment

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// perform makes op on p (nil for a creation) the way a use case would, with
// amounts that make it the operation it names: a partial refund of half of
// what is left, a full refund of all of it. It returns the payment after
// the call and false when op cannot be asked of a payment in p's state (a
// creation of a payment that exists, a full refund of nothing). A new
// operation of the table fails the tests below until it is taught here.
func perform(t *testing.T, p *Payment, op Operation) (*Payment, error, bool) {
	t.Helper()
	const amount = 1000
	if (op == OpCreate || op == OpAuthorize) != (p == nil) {
		return p, nil, false
	}
	remaining := int64(0)
	if p != nil {
		remaining = p.CapturedMinor() - p.RefundedMinor()
	}
	switch op {
	case OpCreate:
		q, err := New(pid, amount, "BRL", "cus_1", "mer_1", "order 42", now)
		return q, err, true
	case OpAuthorize:
		q, err := Authorize(pid, amount, "BRL", "cus_1", "mer_1", "order 42", ttl, now)
		return q, err, true
	case OpCapture:
		return p, p.Capture(mustMoney(t, 600, "BRL"), now), true
	case OpCancel:
		return p, p.Cancel(CancelDuplicate, now), true
	case OpExpire:
		return p, p.Cancel(CancelExpired, now.Add(ttl)), true
	case OpRefundPartial:
		_, err := p.Refund(rid1, mustMoney(t, max(1, remaining/2), "BRL"), now)
		return p, err, remaining != 1
	case OpRefundFull:
		if remaining == 0 {
			return p, nil, false
		}
		_, err := p.Refund(rid1, mustMoney(t, remaining, "BRL"), now)
		return p, err, true
	}
	t.Fatalf("operation %q of the state machine's table: teach perform (lifecycle_test.go) which method makes it", op)
	return nil, nil, false
}

// reach returns a payment in status s, made by the table's own rows from
// StatusNone: the shortest path the table allows.
func reach(t *testing.T, s Status) *Payment {
	t.Helper()
	paths := map[Status][]Operation{StatusNone: nil}
	queue := []Status{StatusNone}
	for len(queue) > 0 {
		from := queue[0]
		queue = queue[1:]
		for _, tr := range Transitions() {
			if _, seen := paths[tr.To]; tr.From == from && !seen {
				paths[tr.To] = append(append([]Operation(nil), paths[from]...), tr.Op)
				queue = append(queue, tr.To)
			}
		}
	}
	path, ok := paths[s]
	if !ok {
		t.Fatalf("no row of the table leads to status %q", s)
	}
	var p *Payment
	for _, op := range path {
		var err error
		if p, err, _ = perform(t, p, op); err != nil {
			t.Fatalf("reach %s: %s: %v", s, op, err)
		}
	}
	p.PullEvents()
	return p
}

// TestEveryTransitionIsMadeByItsMethod: each row of the table, made from a
// payment in its From status, leads to its To status and records exactly
// one event, of its type.
func TestEveryTransitionIsMadeByItsMethod(t *testing.T) {
	for _, tr := range Transitions() {
		t.Run(fmt.Sprintf("%s from %q", tr.Op, tr.From), func(t *testing.T) {
			var p *Payment
			if tr.From != StatusNone {
				p = reach(t, tr.From)
			}
			p, err, ok := perform(t, p, tr.Op)
			if !ok {
				t.Fatalf("perform cannot make %s from %q", tr.Op, tr.From)
			}
			if err != nil {
				t.Fatalf("%s from %q: %v, want the transition to %q", tr.Op, tr.From, err, tr.To)
			}
			if p.Status() != tr.To {
				t.Errorf("status %q, want %q", p.Status(), tr.To)
			}
			events := p.PullEvents()
			if len(events) != 1 || events[0].EventType() != tr.Event {
				t.Errorf("events %+v, want one %s", events, tr.Event)
			}
			if _, err := Rehydrate(p.Snapshot()); err != nil {
				t.Errorf("the payment it made does not rehydrate: %v", err)
			}
		})
	}
}

// TestEveryOtherOperationIsRefused: every status against every operation
// the table does not allow from it is refused with the error Step names,
// and changes nothing: a method that skipped its look-up in the table would
// make the change.
func TestEveryOtherOperationIsRefused(t *testing.T) {
	for _, s := range Statuses() {
		for _, op := range Operations() {
			want, refused := Step(s, op)
			if refused == nil {
				if want.From != s || want.Op != op {
					t.Errorf("Step(%q, %s) = %+v", s, op, want)
				}
				continue
			}
			p := reach(t, s)
			before := p.Snapshot()
			p, err, ok := perform(t, p, op)
			if !ok {
				continue
			}
			if !errors.Is(err, refused) {
				t.Errorf("%s of a payment %s: got %v, want %v", op, s, err, refused)
			}
			if got := p.Snapshot(); got != before || len(p.PullEvents()) != 0 {
				t.Errorf("%s of a payment %s was refused but changed it: %+v, want %+v", op, s, got, before)
			}
		}
	}
}

// TestEveryStatusIsReachable: every status of the table is reached by its
// rows from StatusNone, and a payment in it is one Rehydrate accepts.
func TestEveryStatusIsReachable(t *testing.T) {
	for _, s := range Statuses() {
		p := reach(t, s)
		if _, err := Rehydrate(p.Snapshot()); err != nil {
			t.Errorf("status %q: %v", s, err)
		}
	}
}

// TestSnapshotCarriesEveryField: Snapshot and Rehydrate are the domain's
// side of storing a payment, and the store maps Snapshot's fields to
// columns (adapters/postgres/paymentstore). A field of Payment that
// Snapshot leaves out would be lost at the next write without a store
// noticing: each sample goes through Snapshot and Rehydrate and must come
// back equal, field by field, and every field must be set in some sample,
// since one left at its zero value would pass however it is carried.
func TestSnapshotCarriesEveryField(t *testing.T) {
	refunded := reach(t, StatusPartiallyRefunded)
	captured := reach(t, StatusCaptured)
	if _, err := captured.Refund(rid2, mustMoney(t, 100, "BRL"), now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	captured.PullEvents()
	canceled := reach(t, StatusCanceled)
	samples := []*Payment{refunded, captured, canceled}

	typ := reflect.TypeFor[Payment]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "events" { // recorded, not stored: PullEvents empties it
			continue
		}
		set := false
		for _, p := range samples {
			set = set || !reflect.ValueOf(p).Elem().Field(i).IsZero()
		}
		if !set {
			t.Errorf("no sample sets Payment.%s, so a Snapshot that left it out would pass: make one set it", f.Name)
		}
	}
	for _, p := range samples {
		back, err := Rehydrate(p.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, p) {
			t.Errorf("Rehydrate(Snapshot()) = %+v, want %+v: Snapshot or Rehydrate does not carry a field", back, p)
		}
	}
}
