package ledgerstore_test

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/bookkeeping"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// viewKind finds a branch's kind in the definition Postgres gives back for
// ledger_facts, where a constant kind reads 'refund'::text AS kind.
var viewKind = regexp.MustCompile(`'([^']*)'::text AS kind\b`)

// TestEveryKindIsInLedgerFacts names the place a new kind of fact was
// forgotten: without a branch of its kind in the payments database's view,
// `ledger reconcile` would report every ledger transaction of that kind as
// having no matching row in the payments database.
func TestEveryKindIsInLedgerFacts(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	var def string
	if err := pool.QueryRow(context.Background(), `SELECT pg_get_viewdef('ledger_facts'::regclass)`).Scan(&def); err != nil {
		t.Fatalf("read the definition of ledger_facts: %v", err)
	}
	var inView []ledger.Kind
	for _, m := range viewKind.FindAllStringSubmatch(def, -1) {
		inView = append(inView, ledger.Kind(m[1]))
	}
	if len(inView) == 0 {
		t.Fatalf("found no kind in the definition of ledger_facts; write each branch's kind as a string constant:\n%s", def)
	}
	for _, k := range bookkeeping.Kinds() {
		if !slices.Contains(inView, k) {
			t.Errorf("the ledger posts facts of kind %q but the payments database's view ledger_facts has no branch of that kind, so reconcile cannot find them: add one with CREATE OR REPLACE VIEW in a payments migration (see migrations/payments/00005_ledger_facts.sql)", k)
		}
	}
	for _, k := range inView {
		if !slices.Contains(bookkeeping.Kinds(), k) {
			t.Errorf("ledger_facts lists facts of kind %q, which no event type in the consumer's registry (application/bookkeeping/events.go) posts: reconcile would report each as missing from the ledger", k)
		}
	}
}

// TestReconcileNeedsOnlyTheView connects to the payments database as a role
// granted SELECT on ledger_facts and nothing else, the grant
// docs/PATTERN.md gives reconcile in production: it reads every fact, and no table.
func TestReconcileNeedsOnlyTheView(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	// Roles belong to the server, not to a database: this one is dropped
	// after the test's database, which holds its grant, is gone.
	role, password := "reconcile_"+strings.ReplaceAll(uuid.NewString(), "-", ""), uuid.NewString()
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN PASSWORD '"+password+"'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, pgtest.URL(t))
		if err != nil {
			t.Errorf("drop role %s: %v", role, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP ROLE "+role); err != nil {
			t.Errorf("drop role %s: %v", role, err)
		}
	})

	payments := pgtest.New(t, paymentsmigrations.FS)
	p := newPayment(1000, "cus_v", "mer_v")
	r := p.refund(300, 300)
	insertPayment(t, payments, p)
	insertRefund(t, payments, r)
	if _, err := payments.Exec(ctx, "GRANT SELECT ON ledger_facts TO "+role); err != nil {
		t.Fatal(err)
	}

	u, err := url.Parse(payments.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, password)
	pool, err := postgres.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	facts, err := ledgerstore.NewPaymentsDB(pool).PaymentFacts(ctx)
	if err != nil {
		t.Fatalf("PaymentFacts as %s: %v", role, err)
	}
	want := []bookkeeping.Fact{ // Postgres keeps microseconds
		{PaymentID: p.paymentID, Kind: "payment", Amount: 1000, Currency: "BRL", At: p.at.Truncate(time.Microsecond)},
		{PaymentID: p.paymentID, Kind: "refund", FactID: r.refundID, Amount: 300, Currency: "BRL", At: r.at.Truncate(time.Microsecond)},
	}
	slices.SortFunc(facts, func(a, b bookkeeping.Fact) int { return strings.Compare(string(a.Kind), string(b.Kind)) })
	if len(facts) != len(want) {
		t.Fatalf("got %d facts %v, want %v", len(facts), facts, want)
	}
	for i := range want {
		if g, w := facts[i], want[i]; g.PaymentID != w.PaymentID || g.Kind != w.Kind || g.FactID != w.FactID ||
			g.Amount != w.Amount || g.Currency != w.Currency || !g.At.Equal(w.At) {
			t.Errorf("fact %d: got %s: %d %s at %s, want %s: %d %s at %s", i, g, g.Amount, g.Currency, g.At, w, w.Amount, w.Currency, w.At)
		}
	}

	var pgErr *pgconn.PgError
	if _, err := pool.Exec(ctx, "SELECT 1 FROM payments"); !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("reading the payments table as %s: got %v, want permission denied (42501)", role, err)
	}
}
