package inboxtest

import (
	"context"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
)

// ClaimPending implements inbox.Backlog. Claims are serialised with every
// other transaction, which is SKIP LOCKED's guarantee (no row in two claims)
// without its concurrency; a savepoint is a copy of the state restored when
// fn fails.
func (m *FakeStore[R]) ClaimPending(ctx context.Context, c inbox.Claim, fn func(context.Context, []inbox.PendingMessage, inbox.ApplyFunc[R]) (inbox.BatchResult, error)) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	var rows []inbox.PendingMessage
	for id, msg := range m.inbox {
		st := m.retry[id]
		if !msg.ProcessedAt.IsZero() || !st.parked.IsZero() || st.next.After(now) ||
			!slices.Contains(c.Types, msg.Type) || (len(c.IDs) > 0 && !slices.Contains(c.IDs, id)) {
			continue
		}
		rows = append(rows, inbox.PendingMessage{ID: id, Type: msg.Type, Payload: msg.Payload, ReceivedAt: msg.ReceivedAt, Attempts: st.attempts})
	}
	sort.Slice(rows, func(i, j int) bool {
		if !rows[i].ReceivedAt.Equal(rows[j].ReceivedAt) {
			return rows[i].ReceivedAt.Before(rows[j].ReceivedAt)
		}
		return rows[i].ID < rows[j].ID
	})
	rows = rows[:min(len(rows), c.Limit)]
	if len(rows) == 0 {
		return 0, nil
	}
	restore := m.snapshot()
	apply := func(ctx context.Context, _ inbox.Event, fn func(context.Context, R) error) error {
		savepoint := m.tables.Snapshot() // fn writes only the consumer's tables
		err := fn(ctx, m.tables.Repos())
		if err != nil {
			savepoint()
		}
		return err
	}
	out, err := fn(ctx, rows, apply)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		m.writeResult(out)
		err = m.commit()
	}
	if err != nil {
		restore()
		return len(rows), err
	}
	return len(rows), nil
}

func (m *FakeStore[R]) writeResult(out inbox.BatchResult) {
	for _, p := range out.Processed {
		msg := m.inbox[p.ID]
		msg.ProcessedAt, msg.Error = out.At, p.Note
		m.inbox[p.ID] = msg
	}
	for _, f := range out.Retry {
		msg := m.inbox[f.ID]
		msg.Error = f.Error
		m.inbox[f.ID] = msg
		m.retry[f.ID] = retryState{attempts: f.Attempts, next: f.NextAttemptAt}
	}
	for _, f := range out.Parked {
		msg := m.inbox[f.ID]
		msg.Error = f.Error
		m.inbox[f.ID] = msg
		m.retry[f.ID] = retryState{attempts: f.Attempts, parked: out.At}
	}
}

// InboxStats implements inbox.Admin.
func (m *FakeStore[R]) InboxStats(_ context.Context, types []string) (inbox.Stats, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s inbox.Stats
	now := time.Now()
	for id, msg := range m.inbox {
		st := m.retry[id]
		switch {
		case !msg.ProcessedAt.IsZero():
		case !st.parked.IsZero():
			s.Parked++
		case slices.Contains(types, msg.Type):
			s.Pending++
			s.OldestPending = max(s.OldestPending, now.Sub(msg.ReceivedAt))
		default:
			s.Unhandled++
		}
	}
	return s, nil
}

// DeleteUnhandled implements inbox.Admin, oldest first. A claim holds
// the store's lock for its whole transaction, so no row is ever held by
// another transaction here: SKIP LOCKED's case does not arise.
func (m *FakeStore[R]) DeleteUnhandled(_ context.Context, types []string, cutoff time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var old []inbox.Message
	for id, msg := range m.inbox {
		if msg.ProcessedAt.IsZero() && m.retry[id].parked.IsZero() && !slices.Contains(types, msg.Type) && msg.ReceivedAt.Before(cutoff) {
			old = append(old, msg)
		}
	}
	sort.Slice(old, func(i, j int) bool { return old[i].ReceivedAt.Before(old[j].ReceivedAt) })
	old = old[:min(len(old), limit)]
	for _, msg := range old {
		delete(m.inbox, msg.ID)
		delete(m.retry, msg.ID)
	}
	return len(old), nil
}

// Retry implements inbox.Admin.
func (m *FakeStore[R]) Retry(_ context.Context, ids []string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, st := range m.retry {
		if st.parked.IsZero() || (ids != nil && !slices.Contains(ids, id)) {
			continue
		}
		delete(m.retry, id)
		n++
	}
	if ids != nil && n == 0 {
		return 0, inbox.ErrUnknownMessage
	}
	return n, nil
}

// Attempts returns message id's failed attempts and whether it is parked.
func (m *FakeStore[R]) Attempts(id string) (attempts int, parked bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.inbox[id]; !ok {
		return 0, false, errors.New("no such inbox message")
	}
	st := m.retry[id]
	return st.attempts, !st.parked.IsZero(), nil
}
