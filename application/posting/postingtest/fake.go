package postingtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/payments-outbox/payments-outbox/application/posting"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

var _ Store = (*FakeStore)(nil)

// FakeStore is an in-memory ledger database: posting.Transactor and
// posting.Reader. Transact serialises transactions and rolls back by restoring
// a copy of the state when fn fails, so a failed message leaves nothing, as in
// Postgres. It is safe for concurrent use.
type FakeStore struct {
	mu    sync.Mutex
	inbox map[string]posting.InboxMessage
	retry map[string]retryState // by message id; absent: never failed
	txs   []ledger.Transaction
	// balances is what ledger_balances holds: the sum of the committed
	// entries per account and currency.
	balances map[balanceKey]int64
	failTx   error // returned by Transact instead of committing, when set
	// failCommitOf makes a commit fail while it would commit a posting of
	// this message id: a deferred check failing at COMMIT.
	failCommitOf map[string]error
}

// retryState is the processor's bookkeeping on an inbox row.
type retryState struct {
	attempts int
	next     time.Time // zero: due
	parked   time.Time // zero: not parked
}

type balanceKey struct {
	account  ledger.AccountID
	currency string
}

// NewFakeStore returns an empty FakeStore.
func NewFakeStore() *FakeStore {
	return &FakeStore{inbox: map[string]posting.InboxMessage{}, retry: map[string]retryState{}, failCommitOf: map[string]error{},
		balances: map[balanceKey]int64{}}
}

// FailCommits makes every Transact roll back and return err after fn
// succeeded and the deferred checks passed, as a failed COMMIT would, until
// it is called with nil.
func (m *FakeStore) FailCommits(err error) {
	m.mu.Lock()
	m.failTx = err
	m.mu.Unlock()
}

// Inbox returns a copy of the committed inbox rows, by message id.
func (m *FakeStore) Inbox() map[string]posting.InboxMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.inbox)
}

// Transactions returns the committed ledger transactions, in posting order.
func (m *FakeStore) Transactions() []ledger.Transaction {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.txs)
}

// Transact implements posting.Transactor.
func (m *FakeStore) Transact(ctx context.Context, fn func(posting.Repos) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	undo := m.snapshot()
	err := fn(posting.Repos{Inbox: memInbox{m}, Ledger: memLedger{m}})
	if err == nil {
		err = m.commit(len(undo.txs))
	}
	if err != nil {
		m.restore(undo)
	}
	return err
}

// FailCommitsPosting makes every commit that would post message id fail with
// err, as a deferred constraint does at COMMIT, until called with nil.
func (m *FakeStore) FailCommitsPosting(id string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		delete(m.failCommitOf, id)
		return
	}
	m.failCommitOf[id] = err
}

type fakeState struct {
	inbox    map[string]posting.InboxMessage
	retry    map[string]retryState
	txs      []ledger.Transaction
	balances map[balanceKey]int64
}

func (m *FakeStore) snapshot() fakeState {
	return fakeState{maps.Clone(m.inbox), maps.Clone(m.retry), slices.Clone(m.txs), maps.Clone(m.balances)}
}

func (m *FakeStore) restore(s fakeState) {
	m.inbox, m.retry, m.txs, m.balances = s.inbox, s.retry, s.txs, s.balances
}

// commit commits a transaction that posted m.txs[from:], or returns the
// error its commit fails with, leaving the caller to restore the state. Like
// the database's deferred trigger, it adds the postings to their balances,
// and refuses one that would take a balance past int64.
func (m *FakeStore) commit(from int) error {
	next := maps.Clone(m.balances)
	for _, tx := range m.txs[from:] {
		if err := m.failCommitOf[tx.MessageID()]; err != nil {
			return err
		}
		for _, e := range tx.Entries() {
			k := balanceKey{e.Account(), e.Currency()}
			cur := next[k]
			sum := cur + e.Amount()
			if (e.Amount() > 0 && sum < cur) || (e.Amount() < 0 && sum > cur) {
				return fmt.Errorf("%w: the %s balance of %s would pass what int64 holds", ledger.ErrBalanceLimit, e.Currency(), e.Account())
			}
			next[k] = sum
		}
	}
	if m.failTx != nil { // the deferred checks passed; the commit itself failed
		return m.failTx
	}
	m.balances = next
	return nil
}

type memInbox struct{ m *FakeStore }

func (i memInbox) Insert(_ context.Context, msg posting.InboxMessage) (bool, error) {
	if _, ok := i.m.inbox[msg.ID]; ok {
		return false, nil
	}
	i.m.inbox[msg.ID] = msg
	if !msg.ParkedAt.IsZero() {
		i.m.retry[msg.ID] = retryState{attempts: 1, parked: msg.ParkedAt}
	}
	return true, nil
}

func (i memInbox) Annotate(_ context.Context, id, note string) error {
	msg, ok := i.m.inbox[id]
	if !ok {
		return errors.New("annotate: no such message")
	}
	msg.Error = note
	i.m.inbox[id] = msg
	return nil
}

type memLedger struct{ m *FakeStore }

func (l memLedger) Post(_ context.Context, tx ledger.Transaction, _ time.Time) (bool, error) {
	if !tx.Balanced() {
		return false, errors.New("unbalanced")
	}
	for _, t := range l.m.txs {
		if t.MessageID() == tx.MessageID() ||
			(t.PaymentID() == tx.PaymentID() && t.Kind() == tx.Kind() && t.FactID() == tx.FactID()) {
			return false, nil
		}
	}
	l.m.txs = append(l.m.txs, tx)
	return true, nil
}

// Balances implements posting.Reader: the balances Post kept, by currency.
func (m *FakeStore) Balances(_ context.Context, account ledger.AccountID) ([]ledger.Balance, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ledger.Balance
	for k, amount := range m.balances {
		if k.account == account {
			out = append(out, ledger.RehydrateBalance(account, k.currency, amount))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s", ledger.ErrAccountNotFound, account)
	}
	slices.SortFunc(out, func(a, b ledger.Balance) int { return strings.Compare(a.Currency(), b.Currency()) })
	return out, nil
}

// PaymentTransactions implements posting.Reader.
func (m *FakeStore) PaymentTransactions(_ context.Context, paymentID string) ([]ledger.Transaction, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ledger.Transaction
	for _, t := range m.txs {
		if t.PaymentID() == paymentID {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, ledger.ErrPaymentNotFound
	}
	return out, nil
}
