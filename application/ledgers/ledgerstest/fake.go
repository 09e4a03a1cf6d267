package ledgerstest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

var _ Store = (*FakeStore)(nil)

// FakeStore is an in-memory ledger database, as ledgerstore is one in
// Postgres: the shared inbox (inboxtest.FakeStore) with the ledger's tables
// beside it, written in its transactions, and the ledger's read queries
// (ledgers.Reader). A failed transaction leaves nothing of either. It is
// safe for concurrent use.
type FakeStore struct {
	*inboxtest.FakeStore[ledgers.Ledger]
	ledger *fakeLedger
}

// NewFakeStore returns an empty FakeStore.
func NewFakeStore() *FakeStore {
	l := &fakeLedger{balances: map[balanceKey]int64{}, pending: map[balanceKey]int64{}, payments: map[string]ledger.Payment{}, failCommitOf: map[string]error{}}
	return &FakeStore{FakeStore: inboxtest.NewFakeStore(l), ledger: l}
}

// Transactions returns the committed ledger transactions, in posting order.
func (s *FakeStore) Transactions() []ledger.Transaction {
	l := s.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.txs[:l.committed])
}

// FailCommitsPosting makes every commit that would post message id fail with
// err, as a deferred constraint does at COMMIT, until called with nil.
func (s *FakeStore) FailCommitsPosting(id string, err error) {
	l := s.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		delete(l.failCommitOf, id)
		return
	}
	l.failCommitOf[id] = err
}

// Balances implements ledgers.Reader: the balances the commits kept, by
// currency.
func (s *FakeStore) Balances(_ context.Context, account ledger.AccountID) ([]ledger.Balance, error) {
	l := s.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ledger.Balance
	seen := map[string]bool{}
	for k, amount := range l.balances {
		if k.account == account {
			seen[k.currency] = true
			out = append(out, ledger.RehydrateBalance(account, k.currency, amount, l.pending[k]))
		}
	}
	for k, pending := range l.pending {
		if k.account == account && !seen[k.currency] {
			out = append(out, ledger.RehydrateBalance(account, k.currency, 0, pending))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s", ledger.ErrAccountNotFound, account)
	}
	slices.SortFunc(out, func(a, b ledger.Balance) int { return strings.Compare(a.Currency(), b.Currency()) })
	return out, nil
}

// BalancesAsOf implements ledgers.Reader: the committed entries and
// hold changes written by asOf, summed (the fake keeps its history whole).
func (s *FakeStore) BalancesAsOf(_ context.Context, account ledger.AccountID, asOf time.Time) ([]ledger.Balance, error) {
	l := s.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	posted, pending := map[string]int64{}, map[string]int64{}
	for i, tx := range l.txs[:l.committed] {
		if l.postedAt[i].After(asOf) {
			continue
		}
		for _, e := range tx.Entries() {
			if e.Account() == account {
				posted[e.Currency()] += e.Amount()
			}
		}
	}
	for _, h := range l.history {
		if h.key.account == account && !h.at.After(asOf) {
			pending[h.key.currency] += h.delta
		}
	}
	var out []ledger.Balance
	currencies := maps.Clone(posted)
	maps.Copy(currencies, pending)
	for _, c := range slices.Sorted(maps.Keys(currencies)) {
		if posted[c] != 0 || pending[c] != 0 {
			out = append(out, ledger.RehydrateBalance(account, c, posted[c], pending[c]))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s as of %s", ledger.ErrAccountNotFound, account, asOf)
	}
	return out, nil
}

// PaymentTransactions implements ledgers.Reader.
func (s *FakeStore) PaymentTransactions(_ context.Context, paymentID string) ([]ledger.Transaction, error) {
	var out []ledger.Transaction
	for _, t := range s.Transactions() {
		if t.PaymentID() == paymentID {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, ledger.ErrPaymentNotFound
	}
	return out, nil
}

// fakeLedger is the ledger's tables: inboxtest.Tables of the ledger's
// repository. Its own lock lets the reads run beside the inbox's
// transactions, which see only what committed.
type fakeLedger struct {
	mu        sync.Mutex
	txs       []ledger.Transaction // posted, the uncommitted ones last
	postedAt  []time.Time          // when each of txs was posted
	committed int                  // txs[:committed] are committed
	// balances is what ledger_balances holds: the sum of the committed
	// entries per account and currency.
	balances map[balanceKey]int64
	// pending is ledger_balances.pending: the committed holds per merchant
	// and currency; holds is the transaction's changes of them, added at
	// commit as the database's deferred trigger adds them.
	pending map[balanceKey]int64
	holds   []holdChange
	// history is every committed hold change, with when it was written.
	history []holdChange
	// payments is ledger_payments.
	payments map[string]ledger.Payment
	// failCommitOf makes a commit fail while it would commit a posting of
	// this message id: a deferred check failing at COMMIT.
	failCommitOf map[string]error
}

type holdChange struct {
	key   balanceKey
	delta int64
	at    time.Time
}

type balanceKey struct {
	account  ledger.AccountID
	currency string
}

func (l *fakeLedger) Repos() ledgers.Ledger { return memLedger{l} }

func (l *fakeLedger) Snapshot() func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	txs, postedAt, committed, balances := slices.Clone(l.txs), slices.Clone(l.postedAt), l.committed, maps.Clone(l.balances)
	pending, holds, payments, history := maps.Clone(l.pending), slices.Clone(l.holds), maps.Clone(l.payments), slices.Clone(l.history)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.txs, l.postedAt, l.committed, l.balances = txs, postedAt, committed, balances
		l.pending, l.holds, l.payments, l.history = pending, holds, payments, history
	}
}

// Commit does what the ledger database's deferred trigger does: it checks
// the transaction's postings, adds them to their balances, and refuses one
// that would take a balance past int64, as ledgerstore reports it.
func (l *fakeLedger) Commit() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := maps.Clone(l.balances)
	for _, tx := range l.txs[l.committed:] {
		if err := l.failCommitOf[tx.MessageID()]; err != nil {
			return err
		}
		for _, e := range tx.Entries() {
			k := balanceKey{e.Account(), e.Currency()}
			cur := next[k]
			sum := cur + e.Amount()
			if (e.Amount() > 0 && sum < cur) || (e.Amount() < 0 && sum > cur) {
				return fmt.Errorf("%w: %w: the %s balance of %s would pass what int64 holds",
					inbox.ErrPermanent, ledger.ErrBalanceLimit, e.Currency(), e.Account())
			}
			next[k] = sum
		}
	}
	pending := maps.Clone(l.pending)
	for _, h := range l.holds {
		cur := pending[h.key]
		if h.delta > 0 && cur+h.delta < cur {
			return fmt.Errorf("%w: %w: the %s pending balance of %s would pass what int64 holds",
				inbox.ErrPermanent, ledger.ErrBalanceLimit, h.key.currency, h.key.account)
		}
		pending[h.key] = cur + h.delta
	}
	l.history = append(l.history, l.holds...)
	l.balances, l.pending, l.holds, l.committed = next, pending, nil, len(l.txs)
	return nil
}

type memLedger struct{ l *fakeLedger }

func (m memLedger) Post(_ context.Context, tx ledger.Transaction, postedAt time.Time) (bool, error) {
	l := m.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if !tx.Balanced() {
		return false, errors.New("unbalanced")
	}
	for _, t := range l.txs {
		if t.MessageID() == tx.MessageID() ||
			(t.PaymentID() == tx.PaymentID() && t.Kind() == tx.Kind() && t.FactID() == tx.FactID()) {
			return false, nil
		}
	}
	l.txs, l.postedAt = append(l.txs, tx), append(l.postedAt, postedAt)
	return true, nil
}

func (m memLedger) Posted(_ context.Context, paymentID string, kind ledger.Kind, factID string) (bool, error) {
	l := m.l
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.txs {
		if t.PaymentID() == paymentID && t.Kind() == kind && (t.FactID() == "" || t.FactID() == factID) {
			return true, nil
		}
	}
	return false, nil
}

func (m memLedger) Payment(_ context.Context, id string) (ledger.Payment, error) {
	l := m.l
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.payments[id]
	if !ok {
		return ledger.Payment{}, fmt.Errorf("%w: %s", ledger.ErrPaymentNotFound, id)
	}
	return p, nil
}

func (m memLedger) AddPayment(_ context.Context, p ledger.Payment, at time.Time) (bool, error) {
	l := m.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.payments[p.ID()]; ok {
		return false, nil
	}
	if err := limits(p); err != nil {
		return false, err
	}
	l.payments[p.ID()] = p
	l.moveHold(p, p.Held(), at)
	return true, nil
}

func (m memLedger) SavePayment(_ context.Context, p ledger.Payment, at time.Time) error {
	l := m.l
	l.mu.Lock()
	defer l.mu.Unlock()
	old, ok := l.payments[p.ID()]
	if !ok {
		return fmt.Errorf("%w: %s", ledger.ErrPaymentNotFound, p.ID())
	}
	if err := limits(p); err != nil {
		return err
	}
	l.payments[p.ID()] = p
	l.moveHold(p, p.Held()-old.Held(), at)
	return nil
}

func (l *fakeLedger) moveHold(p ledger.Payment, delta int64, at time.Time) {
	if delta != 0 {
		l.holds = append(l.holds, holdChange{balanceKey{p.Merchant(), p.Currency()}, delta, at})
	}
}

// limits are the CHECKs of ledger_payments, as ledgerstore reports them.
func limits(p ledger.Payment) error {
	switch {
	case p.Held() < 0 || p.Held() > p.Authorized():
		return fmt.Errorf("%w: ledger_payments_held_check", ledger.ErrCaptureExceedsHold)
	case p.Captured() < 0 || (p.Authorized() > 0 && p.Captured() > p.Authorized()):
		return fmt.Errorf("%w: ledger_payments_captured_check", ledger.ErrCaptureExceedsHold)
	case p.Refunded() < 0 || p.Refunded() > p.Captured():
		return fmt.Errorf("%w: ledger_payments_refunded_check", ledger.ErrRefundExceedsCaptured)
	}
	return nil
}
