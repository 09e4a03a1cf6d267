package ledgerstest

import (
	"context"
	"fmt"

	"github.com/payments-outbox/payments-outbox/application/ledgers"
)

// AccountEntries implements ledgers.Reader. An entry's id is its place
// among the committed entries, counted from 1 in posting order: a rolled
// back posting took no place, and a later posting always has a greater id,
// as the identity column gives them in Postgres.
func (s *FakeStore) AccountEntries(_ context.Context, q ledgers.EntryQuery) ([]ledgers.AccountEntry, error) {
	var (
		mine   []ledgers.AccountEntry // oldest first
		id     int64
		cursor = q.After == 0
	)
	for _, tx := range s.Transactions() {
		for _, e := range tx.Entries() {
			id++
			if e.Account() != q.Account {
				continue
			}
			if id == q.After {
				cursor = true
			}
			if q.After == 0 || id < q.After {
				mine = append(mine, ledgers.AccountEntry{ID: id, Entry: e, Transaction: tx})
			}
		}
	}
	if !cursor {
		return nil, fmt.Errorf("%w: %d", ledgers.ErrUnknownCursor, q.After)
	}
	out := make([]ledgers.AccountEntry, 0, min(q.Limit, len(mine)))
	for i := len(mine) - 1; i >= 0 && len(out) < q.Limit; i-- {
		out = append(out, mine[i])
	}
	return out, nil
}
