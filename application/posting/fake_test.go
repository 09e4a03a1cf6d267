package posting_test

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/payments-outbox/payments-outbox/application/posting"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// memStore is an in-memory fake of the ledger database: Transactor and
// Reader. Transact serialises transactions and rolls back by restoring
// a copy of the state when fn fails.
type memStore struct {
	mu     sync.Mutex
	inbox  map[string]posting.InboxMessage
	txs    []ledger.Transaction
	failTx error // returned by Transact instead of committing, when set
}

func newMemStore() *memStore {
	return &memStore{inbox: map[string]posting.InboxMessage{}}
}

func (m *memStore) Transact(ctx context.Context, fn func(posting.Repos) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	inbox := make(map[string]posting.InboxMessage, len(m.inbox))
	for k, v := range m.inbox {
		inbox[k] = v
	}
	txs := append([]ledger.Transaction(nil), m.txs...)
	err := fn(posting.Repos{Inbox: memInbox{m}, Ledger: memLedger{m}})
	if err == nil {
		err = m.failTx
	}
	if err != nil {
		m.inbox, m.txs = inbox, txs
	}
	return err
}

type memInbox struct{ m *memStore }

func (i memInbox) Insert(_ context.Context, msg posting.InboxMessage) (bool, error) {
	if _, ok := i.m.inbox[msg.ID]; ok {
		return false, nil
	}
	i.m.inbox[msg.ID] = msg
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

type memLedger struct{ m *memStore }

func (l memLedger) Post(_ context.Context, tx ledger.Transaction, _ time.Time) (bool, error) {
	if !tx.Balanced() {
		return false, errors.New("unbalanced")
	}
	for _, t := range l.m.txs {
		if t.MessageID() == tx.MessageID() ||
			(t.PaymentID() == tx.PaymentID() && t.Kind() == tx.Kind() && t.RefundID() == tx.RefundID()) {
			return false, nil
		}
	}
	l.m.txs = append(l.m.txs, tx)
	return true, nil
}

func (m *memStore) Balances(_ context.Context, account ledger.AccountID) ([]ledger.Balance, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sums := map[string]int64{}
	var currencies []string
	for _, t := range m.txs {
		for _, e := range t.Entries() {
			if e.Account() != account {
				continue
			}
			if _, ok := sums[e.Currency()]; !ok {
				currencies = append(currencies, e.Currency())
			}
			sums[e.Currency()] += e.Amount()
		}
	}
	if len(currencies) == 0 {
		return nil, ledger.ErrAccountNotFound
	}
	var out []ledger.Balance
	for _, c := range currencies {
		out = append(out, ledger.RehydrateBalance(account, c, sums[c]))
	}
	return out, nil
}

func (m *memStore) PaymentTransactions(_ context.Context, paymentID string) ([]ledger.Transaction, error) {
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
