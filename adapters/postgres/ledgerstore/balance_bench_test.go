package ledgerstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// BenchmarkBalanceRead measures reading a merchant's balance with 10 and with
// 1,000,000 entries on its account: the read is one row of ledger_balances
// whatever the history, so both should cost the same. as_of=recent reads the
// balance as of a second before the last posting, which subtracts what came
// after it: its cost grows with what happened since as_of, not with the
// history. The history is written with the triggers off (session_replication_role
// = replica) and its balance row set to match: what is measured is the read.
//
//	go test -run '^$' -bench BalanceRead -benchtime 2000x ./adapters/postgres/ledgerstore/
func BenchmarkBalanceRead(b *testing.B) {
	for _, entries := range []int{10, 1_000_000} {
		store, account := balanceHistory(b, entries)
		b.Run(fmt.Sprintf("entries=%d/now", entries), func(b *testing.B) {
			for b.Loop() {
				if _, err := store.Balances(context.Background(), account); err != nil {
					b.Fatal(err)
				}
			}
		})
		asOf := time.Now().Add(-time.Second)
		b.Run(fmt.Sprintf("entries=%d/as_of=recent", entries), func(b *testing.B) {
			for b.Loop() {
				if _, err := store.BalancesAsOf(context.Background(), account, asOf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// balanceHistory is a ledger whose merchant account has n entries (n/2
// payments, each the merchant's credit and a payer's debit spread over
// other accounts), posted one a second back in time, the newest in the last
// second.
func balanceHistory(b *testing.B, n int) (*ledgerstore.Store, ledger.AccountID) {
	b.Helper()
	ctx := context.Background()
	pool, err := postgres.Open(ctx, pgtest.NewDatabase(b), postgres.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := postgres.Migrate(ctx, pool, ledgermigrations.FS); err != nil {
		b.Fatal(err)
	}
	account, err := ledger.MerchantAccount("mer_hot")
	if err != nil {
		b.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{sql: `SET session_replication_role = replica`},
		{sql: `INSERT INTO ledger_transactions (message_id, payment_id, kind, amount, currency, occurred_at, posted_at)
		 SELECT gen_random_uuid(), gen_random_uuid(), 'payment', 100, 'BRL', t, t
		 FROM (SELECT now() - make_interval(secs => CASE WHEN i = 1 THEN 0.5 ELSE i END) AS t
		       FROM generate_series(1, $1::int) AS i) s`, args: []any{max(n/2, 1)}},
		{sql: `INSERT INTO ledger_entries (transaction_id, account_id, amount, currency)
		 SELECT id, $1, 100, 'BRL' FROM ledger_transactions
		 UNION ALL
		 SELECT id, 'payer:mer_hot:cus_' || (id % 1000), -100, 'BRL' FROM ledger_transactions`, args: []any{account.String()}},
		{sql: `INSERT INTO ledger_balances (account_id, currency, posted, pending)
		 SELECT account_id, currency, sum(amount), 0 FROM ledger_entries GROUP BY account_id, currency`},
		{sql: `RESET session_replication_role`},
		{sql: `VACUUM ANALYZE`},
	} {
		if _, err := conn.Exec(ctx, st.sql, st.args...); err != nil {
			b.Fatalf("%.60s: %v", st.sql, err)
		}
	}
	return ledgerstore.New(pool), account
}
