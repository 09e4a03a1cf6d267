package ledgerstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// TestAccountEntriesReadTheirIndex: the page of an account's entries is one
// range of ledger_entries_account_id_idx, bounded by the cursor when there
// is one — what makes a page cost the same however deep it is; only the
// page's few rows are sorted, when their legs are joined. A change of the
// ORDER BY, the cursor's comparison or the index fails here. The tables of
// a test are nearly empty, so sequential and bitmap scans are off: the
// planner would rightly prefer them there.
func TestAccountEntriesReadTheirIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t, ledgermigrations.FS)
	account, err := ledger.MerchantAccount("mer_1")
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]ledgers.EntryQuery{
		"the first page": {Account: account, Limit: 11},
		"after a cursor": {Account: account, Limit: 11, After: 42},
	} {
		t.Run(name, func(t *testing.T) {
			sql, args := ledgerstore.EntriesSQL(q)
			var plan []string
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off`); err != nil {
					return err
				}
				rows, err := tx.Query(ctx, "EXPLAIN "+sql, args...)
				if err != nil {
					return err
				}
				plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			text := strings.Join(plan, "\n")
			scan := -1
			for i, line := range plan {
				if strings.Contains(line, "Index Scan using ledger_entries_account_id_idx") {
					scan = i
				}
			}
			switch {
			case scan < 0 || scan+1 >= len(plan):
				t.Errorf("the plan of\n%s\nis\n%s\nwant an Index Scan of ledger_entries_account_id_idx", sql, text)
			case q.After != 0 && !strings.Contains(plan[scan+1], "id < "):
				t.Errorf("the plan of\n%s\nis\n%s\nwant the cursor (id < …) in the Index Cond of ledger_entries_account_id_idx", sql, text)
			case scan == 0 || !strings.Contains(plan[scan-1], "Limit"):
				t.Errorf("the plan of\n%s\nis\n%s\nwant the page's Limit straight on the index's range: the entries read in its order, not sorted first", sql, text)
			}
		})
	}
}
