package postingtest

import (
	"context"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/payments-outbox/payments-outbox/application/posting"
)

var (
	_ posting.Backlog    = (*FakeStore)(nil)
	_ posting.InboxAdmin = (*FakeStore)(nil)
)

// ClaimPending implements posting.Backlog. Claims are serialised with every
// other transaction, which is SKIP LOCKED's guarantee (no row in two claims)
// without its concurrency; a savepoint is a copy of the state restored when
// fn fails.
func (m *FakeStore) ClaimPending(ctx context.Context, c posting.Claim, fn func(context.Context, []posting.PendingMessage, posting.ApplyFunc) (posting.BatchResult, error)) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	var rows []posting.PendingMessage
	for id, msg := range m.inbox {
		st := m.retry[id]
		if !msg.ProcessedAt.IsZero() || !st.parked.IsZero() || st.next.After(now) ||
			!slices.Contains(c.Types, msg.Type) || (len(c.IDs) > 0 && !slices.Contains(c.IDs, id)) {
			continue
		}
		rows = append(rows, posting.PendingMessage{ID: id, Type: msg.Type, Payload: msg.Payload, ReceivedAt: msg.ReceivedAt, Attempts: st.attempts})
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
	undo := m.snapshot()
	apply := func(ctx context.Context, fn func(posting.Repos) error) error {
		sp := m.snapshot()
		err := fn(posting.Repos{Inbox: memInbox{m}, Ledger: memLedger{m}})
		if err != nil {
			m.restore(sp)
		}
		return err
	}
	out, err := fn(ctx, rows, apply)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		m.writeOutcome(out)
		err = m.commit(len(undo.txs))
	}
	if err != nil {
		m.restore(undo)
		return len(rows), err
	}
	return len(rows), nil
}

func (m *FakeStore) writeOutcome(out posting.BatchResult) {
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

// InboxStats implements posting.InboxAdmin.
func (m *FakeStore) InboxStats(_ context.Context, types []string) (posting.InboxStats, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s posting.InboxStats
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

// DeleteUnhandled implements posting.InboxAdmin, oldest first. A claim holds
// the store's lock for its whole transaction, so no row is ever held by
// another transaction here: SKIP LOCKED's case does not arise.
func (m *FakeStore) DeleteUnhandled(_ context.Context, types []string, cutoff time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var old []posting.InboxMessage
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

// Retry implements posting.InboxAdmin.
func (m *FakeStore) Retry(_ context.Context, ids []string) (int, error) {
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
		return 0, posting.ErrUnknownMessage
	}
	return n, nil
}

// Attempts returns message id's failed attempts and whether it is parked.
func (m *FakeStore) Attempts(id string) (attempts int, parked bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.inbox[id]; !ok {
		return 0, false, errors.New("no such inbox message")
	}
	st := m.retry[id]
	return st.attempts, !st.parked.IsZero(), nil
}
