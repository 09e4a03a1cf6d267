package ledgerstore_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
	"github.com/payments-outbox/payments-outbox/domain/payment"
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
	for _, k := range ledgers.Kinds() {
		if !slices.Contains(inView, k) {
			t.Errorf("the ledger posts facts of kind %q but the payments database's view ledger_facts has no branch of that kind, so reconcile cannot find them: add one with CREATE OR REPLACE VIEW in a payments migration (migrations/payments/00001_payments.sql says how)", k)
		}
	}
	for _, k := range inView {
		if !slices.Contains(ledgers.Kinds(), k) {
			t.Errorf("ledger_facts lists facts of kind %q, which no event type in the consumer's registry (application/ledgers/events.go) posts: reconcile would report each as missing from the ledger", k)
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
	pool, err := postgres.Open(ctx, u.String(), postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	facts, err := ledgerstore.NewPaymentsDB(pool).PaymentFacts(ctx)
	if err != nil {
		t.Fatalf("PaymentFacts as %s: %v", role, err)
	}
	parties := ledger.Parties{Merchant: "mer_v", Payer: "cus_v"}
	want := []ledgers.Fact{ // Postgres keeps microseconds
		{PaymentID: p.paymentID, Kind: "payment", Amount: 1000, Currency: "BRL", At: p.at.Truncate(time.Microsecond), Parties: parties},
		{PaymentID: p.paymentID, Kind: "refund", FactID: r.refundID, Amount: 300, Currency: "BRL", At: r.at.Truncate(time.Microsecond), Parties: parties},
	}
	slices.SortFunc(facts, func(a, b ledgers.Fact) int { return strings.Compare(string(a.Kind), string(b.Kind)) })
	if len(facts) != len(want) {
		t.Fatalf("got %d facts %v, want %v", len(facts), facts, want)
	}
	for i := range want {
		if g, w := facts[i], want[i]; g.PaymentID != w.PaymentID || g.Kind != w.Kind || g.FactID != w.FactID ||
			g.Amount != w.Amount || g.Currency != w.Currency || !g.At.Equal(w.At) || g.Parties != w.Parties {
			t.Errorf("fact %d: got %s: %d %s at %s between %+v, want %s: %d %s at %s between %+v", i, g, g.Amount, g.Currency, g.At, g.Parties,
				w, w.Amount, w.Currency, w.At, w.Parties)
		}
	}

	var pgErr *pgconn.PgError
	if _, err := pool.Exec(ctx, "SELECT 1 FROM payments"); !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("reading the payments table as %s: got %v, want permission denied (42501)", role, err)
	}
}

// reconcileRules is the decision, for every status a payment can be in, of
// what the payments database asserts the ledger must hold for it: how many
// facts of each kind ledger_facts lists for one payment in that status, with
// the refunds the status comes with. Every status of the domain
// (domain/payment) and every kind of the ledger's registry
// (ledgers.Kinds) must be decided here, so that a new status or a new
// kind cannot join reconciliation without somebody deciding whether that
// money moved — and so that a new kind (a hold, say) makes its author revisit
// the existing statuses' rules too, such as whether an authorized payment is
// still a "payment".
var reconcileRules = map[payment.Status]struct {
	method  payment.CaptureMethod // the capture method of a payment in this status
	refunds int                   // refund rows a payment in this status has
	facts   map[ledger.Kind]int
}{
	payment.StatusCreated:           {payment.CaptureAutomatic, 0, map[ledger.Kind]int{"payment": 1, "refund": 0, "authorization": 0, "capture": 0, "cancellation": 0}},
	payment.StatusPartiallyRefunded: {payment.CaptureAutomatic, 1, map[ledger.Kind]int{"payment": 1, "refund": 1, "authorization": 0, "capture": 0, "cancellation": 0}},
	payment.StatusRefunded:          {payment.CaptureAutomatic, 2, map[ledger.Kind]int{"payment": 1, "refund": 2, "authorization": 0, "capture": 0, "cancellation": 0}},
	// A hold, no money moved: an authorization only.
	payment.StatusAuthorized: {payment.CaptureManual, 0, map[ledger.Kind]int{"payment": 0, "refund": 0, "authorization": 1, "capture": 0, "cancellation": 0}},
	payment.StatusCaptured:   {payment.CaptureManual, 0, map[ledger.Kind]int{"payment": 0, "refund": 0, "authorization": 1, "capture": 1, "cancellation": 0}},
	// The hold released, no money moved.
	payment.StatusCanceled: {payment.CaptureManual, 0, map[ledger.Kind]int{"payment": 0, "refund": 0, "authorization": 1, "capture": 0, "cancellation": 1}},
}

// TestEveryStatusHasAReconcileRule checks reconcileRules against the domain's
// statuses, read from its source, and the registry's kinds, then stores one
// payment in each status and requires ledger_facts to list exactly the facts
// its rule says.
func TestEveryStatusHasAReconcileRule(t *testing.T) {
	t.Parallel()
	statuses := domainStatuses(t)
	for _, s := range statuses {
		rule, ok := reconcileRules[s]
		if !ok {
			t.Errorf("payment status %q has no reconcile rule: decide, for each kind the ledger posts, how many facts a payment in it is, add that to reconcileRules, and make ledger_facts agree in a payments migration (migrations/payments/00001_payments.sql says how)", s)
			continue
		}
		for _, k := range ledgers.Kinds() {
			if _, ok := rule.facts[k]; !ok {
				t.Errorf("reconcileRules does not say how many facts of kind %q a payment in status %q is: decide it (0 is a decision)", k, s)
			}
		}
		for k := range rule.facts {
			if !slices.Contains(ledgers.Kinds(), k) {
				t.Errorf("reconcileRules counts facts of kind %q for status %q, a kind the ledger's registry does not post", k, s)
			}
		}
	}
	for s := range reconcileRules {
		if !slices.Contains(statuses, s) {
			t.Errorf("reconcileRules decides status %q, which the domain does not have", s)
		}
	}
	if t.Failed() {
		return
	}

	ctx := context.Background()
	pool := pgtest.New(t, paymentsmigrations.FS)
	at := time.Now().Add(-time.Hour)
	ids := map[string]payment.Status{}
	for s, rule := range reconcileRules {
		id := uuid.NewString()
		ids[id] = s
		const amount, refund = 1000, 100
		// A manual payment's own columns, set as its status has them.
		captured, captureBefore, capturedAt, canceledAt, reason := int64(amount), (*time.Time)(nil), (*time.Time)(nil), (*time.Time)(nil), (*string)(nil)
		if rule.method == payment.CaptureManual {
			deadline := at.Add(time.Hour)
			captureBefore, capturedAt = &deadline, &at
			switch s {
			case payment.StatusAuthorized, payment.StatusCanceled:
				captured, capturedAt = 0, nil
			}
			if s == payment.StatusCanceled {
				r := string(payment.CancelRequestedByCustomer)
				canceledAt, reason = &at, &r
			}
		}
		// A refunded payment refunded all it captured
		// (payments_status_refunded_check): its refunds share the capture.
		each := int64(refund)
		if s == payment.StatusRefunded {
			each = captured / int64(rule.refunds)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO payments (id, amount, refunded_amount, currency, status, payer_id, merchant_id, created_at, updated_at,
				capture_method, amount_captured, capture_before, captured_at, canceled_at, cancellation_reason)
			VALUES ($1, $2, $3, 'BRL', $4, 'cus_1', 'mer_1', $5, $5, $6, $7, $8, $9, $10, $11)`, id, amount, each*int64(rule.refunds), string(s), at,
			string(rule.method), captured, captureBefore, capturedAt, canceledAt, reason); err != nil {
			t.Fatalf("store a payment in status %q: %v (does the payments table's CHECK on status know it?)", s, err)
		}
		for range rule.refunds {
			if _, err := pool.Exec(ctx, `INSERT INTO refunds (id, payment_id, amount, created_at) VALUES ($1, $2, $3, $4)`,
				uuid.NewString(), id, each, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	facts, err := ledgerstore.NewPaymentsDB(pool).PaymentFacts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[payment.Status]map[ledger.Kind]int{}
	for _, f := range facts {
		s, ok := ids[f.PaymentID]
		if !ok {
			t.Fatalf("ledger_facts lists %s, of no payment this test stored", f)
		}
		if got[s] == nil {
			got[s] = map[ledger.Kind]int{}
		}
		got[s][f.Kind]++
	}
	for s, rule := range reconcileRules {
		for k, want := range rule.facts {
			if got[s][k] != want {
				t.Errorf("a payment in status %q is %d facts of kind %q in ledger_facts, want %d (reconcileRules): reconcile would expect money the ledger should not hold, or miss money it holds", s, got[s][k], k, want)
			}
		}
		for k, n := range got[s] {
			if _, ok := rule.facts[k]; !ok {
				t.Errorf("a payment in status %q is %d facts of kind %q in ledger_facts, which reconcileRules does not decide", s, n, k)
			}
		}
	}
}

// domainStatuses reads the payment statuses from the domain's source: the
// constants of type Status, so that a new one is found without being told.
func domainStatuses(t *testing.T) []payment.Status {
	t.Helper()
	files, err := filepath.Glob("../../../domain/payment/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []payment.Status
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				v := spec.(*ast.ValueSpec)
				if typ, ok := v.Type.(*ast.Ident); !ok || typ.Name != "Status" {
					continue
				}
				for _, value := range v.Values {
					lit, ok := value.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: a Status constant that is not a string literal; this test reads them as such", fset.Position(value.Pos()))
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, payment.Status(s))
				}
			}
		}
	}
	if len(out) < 2 {
		t.Fatalf("found the statuses %v in domain/payment; the test is not looking where it should", out)
	}
	return out
}
