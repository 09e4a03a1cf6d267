package inboxtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
)

var _ Store[struct{}] = (*FakeStore[struct{}])(nil)

// Tables are a consumer's own tables in memory, which a FakeStore writes in
// its transactions beside the inbox: what a consumer's fake adds to the
// inbox's (ledgerstest's ledger is one). Every method is called with the
// store's lock held, one transaction at a time.
type Tables[R any] interface {
	// Repos returns the consumer's repositories, writing to the tables.
	Repos() R
	// Snapshot returns a function that puts the tables back as they are
	// now: a transaction's or a savepoint's rollback.
	Snapshot() (restore func())
	// Commit runs what the consumer's database does at COMMIT (deferred
	// checks, derived rows) and returns the error that refuses the commit,
	// if any: the store then rolls the whole transaction back.
	Commit() error
}

// NoTables are the tables of a consumer that writes nothing of its own:
// enough for the inbox's contract, which never looks at a consumer's rows.
type NoTables struct{}

// Repos returns struct{}{}.
func (NoTables) Repos() struct{} { return struct{}{} }

// Snapshot returns a restore that does nothing.
func (NoTables) Snapshot() func() { return func() {} }

// Commit accepts every commit.
func (NoTables) Commit() error { return nil }

// FakeStore is an in-memory inbox with a consumer's tables beside it: an
// inbox.Recorder[R], inbox.Backlog[R] and inbox.Admin. Record serialises
// transactions and rolls back by restoring a copy of the state when apply or
// the commit fails, so a failed message leaves nothing, as in Postgres. It is
// safe for concurrent use.
type FakeStore[R any] struct {
	mu     sync.Mutex
	tables Tables[R]
	inbox  map[string]inbox.Message
	retry  map[string]retryState // by message id; absent: never failed
	failTx error                 // returned by every commit instead of committing, when set
}

// retryState is the processor's bookkeeping on an inbox row.
type retryState struct {
	attempts int
	next     time.Time // zero: due
	parked   time.Time // zero: not parked
}

// NewFakeStore returns an empty inbox beside tables.
func NewFakeStore[R any](tables Tables[R]) *FakeStore[R] {
	return &FakeStore[R]{tables: tables, inbox: map[string]inbox.Message{}, retry: map[string]retryState{}}
}

// FailCommits makes every commit roll back and return err after the
// tables' own commit checks passed, as a failed COMMIT would, until it is
// called with nil.
func (m *FakeStore[R]) FailCommits(err error) {
	m.mu.Lock()
	m.failTx = err
	m.mu.Unlock()
}

// Inbox returns a copy of the committed inbox rows, by message id.
func (m *FakeStore[R]) Inbox() map[string]inbox.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.inbox)
}

// Record implements inbox.Recorder.
func (m *FakeStore[R]) Record(ctx context.Context, msg inbox.Message, apply func(context.Context, R) (string, error)) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if had, ok := m.inbox[msg.ID]; ok {
		if !sameJSON(had.Payload, msg.Payload) {
			return false, fmt.Errorf("%w: %s", inbox.ErrConflictingDuplicate, msg.ID)
		}
		return false, nil
	}
	restore := m.snapshot()
	m.insert(msg)
	var err error
	if apply != nil {
		var note string
		if note, err = apply(ctx, m.tables.Repos()); err == nil && note != "" {
			msg.Error = note
			m.inbox[msg.ID] = msg
		}
	}
	if err == nil {
		err = m.commit()
	}
	if err != nil {
		restore()
		return false, err
	}
	return true, nil
}

// snapshot returns a function that puts the inbox and the tables back as
// they are now.
func (m *FakeStore[R]) snapshot() (restore func()) {
	in, retry, tables := maps.Clone(m.inbox), maps.Clone(m.retry), m.tables.Snapshot()
	return func() { m.inbox, m.retry = in, retry; tables() }
}

// commit returns the error the transaction's commit fails with, leaving the
// caller to restore the state: the tables' own, else the one FailCommits set.
func (m *FakeStore[R]) commit() error {
	if err := m.tables.Commit(); err != nil {
		return err
	}
	return m.failTx
}

// insert writes msg as a new inbox row, with the processor's state of a row
// recorded parked.
func (m *FakeStore[R]) insert(msg inbox.Message) {
	m.inbox[msg.ID] = msg
	if !msg.ParkedAt.IsZero() {
		m.retry[msg.ID] = retryState{attempts: 1, parked: msg.ParkedAt}
	}
}

// sameJSON reports whether a and b are the same JSON document, as Postgres'
// jsonb compares them: the same values, whatever the spacing or the order
// of an object's members. Either not JSON, their bytes.
func sameJSON(a, b []byte) bool {
	decode := func(b []byte) (any, error) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber() // an int64 amount is compared whole, not as a float64
		var v any
		return v, d.Decode(&v)
	}
	x, errX := decode(a)
	y, errY := decode(b)
	if errX != nil || errY != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}
