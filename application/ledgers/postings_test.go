package ledgers

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// TestEveryKindIsDeclaredOnceAndSoundly: each kind has one declaration (two
// event types of one kind would be two, free to disagree), a declaration the
// ledger can post by, an effect that agrees with it on whether money moves,
// and predecessors the registry declares, in no circle: a kind that depends
// on a kind no rule applies, or on itself through others, would wait for
// good.
func TestEveryKindIsDeclaredOnceAndSoundly(t *testing.T) {
	declared := map[ledger.Kind]string{}
	for typ, r := range rules {
		d := r.postings
		if other, ok := declared[d.Kind]; ok {
			t.Errorf("kind %q is declared by %s and %s: declare each kind once (application/ledgers/events.go)", d.Kind, other, typ)
		}
		declared[d.Kind] = typ
		if err := d.Check(); err != nil {
			t.Errorf("%s: %v", typ, err)
		}
		if r.effect.posts() != d.Moves() {
			t.Errorf("%s: its effect posts=%v, but its postings move money=%v", typ, r.effect.posts(), d.Moves())
		}
	}
	for _, r := range rules {
		for _, k := range r.postings.DependsOn {
			if _, ok := declared[k]; !ok {
				t.Errorf("kind %q depends on %q, which no rule declares: it would wait for good", r.postings.Kind, k)
			}
		}
		// Follow the predecessors: none leads back.
		seen, next := map[ledger.Kind]bool{}, slices.Clone(r.postings.DependsOn)
		for len(next) > 0 {
			k := next[0]
			next = next[1:]
			if k == r.postings.Kind {
				t.Errorf("kind %q depends on itself, through %v: neither would ever apply", k, r.postings.DependsOn)
				break
			}
			if seen[k] {
				continue
			}
			seen[k] = true
			if d, ok := ruleOf(k); ok {
				next = append(next, d.postings.DependsOn...)
			}
		}
	}
}

// ledgerTable reads the table of docs/LEDGER.md, "Which way each fact moves
// money": kind → its row's cells (event type, debit, credit, depends on).
func ledgerTable(t *testing.T) map[ledger.Kind][]string {
	t.Helper()
	const path = "../../docs/LEDGER.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const header = "| kind | event type | debit | credit | depends on |"
	_, table, ok := strings.Cut(string(doc), header)
	if !ok {
		t.Fatalf("%s has no table whose header starts %q; the test is not looking where it should", path, header)
	}
	rows := map[ledger.Kind][]string{}
	for _, line := range strings.Split(table, "\n")[2:] { // the rest of the header, the rule
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows[ledger.Kind(strings.Trim(cells[0], "`"))] = cells[1:]
	}
	return rows
}

// ticked returns the words of a cell between backticks, in order: none for
// "—".
func ticked(cell string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`([^`]*)`").FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

func roleName(r ledger.Role) []string {
	if r == 0 {
		return nil
	}
	return []string{r.String()}
}

// TestLedgerMdTableIsTheRegistrysPostings holds the registry's declarations
// to docs/LEDGER.md's table, a second statement of which way each kind moves
// money, written for a reader: a kind the table lacks, or one whose roles or
// predecessors differ (a refund's accounts swapped, a capture that no longer
// waits for its authorization), fails here, and the reviewer of the change
// sees both.
func TestLedgerMdTableIsTheRegistrysPostings(t *testing.T) {
	table := ledgerTable(t)
	if len(table) == 0 {
		t.Fatal("docs/LEDGER.md's table has no rows; the test is not looking where it should")
	}
	for typ, r := range rules {
		d := r.postings
		row, ok := table[d.Kind]
		if !ok {
			t.Errorf("kind %q (%s) is not in docs/LEDGER.md's table: add its row (event type, debit, credit, depends on)", d.Kind, typ)
			continue
		}
		var deps []string
		for _, k := range d.DependsOn {
			deps = append(deps, string(k))
		}
		for _, c := range []struct {
			column string
			doc    []string
			code   []string
		}{
			{"event type", ticked(row[0]), []string{typ}},
			{"debit", ticked(row[1]), roleName(d.Debit)},
			{"credit", ticked(row[2]), roleName(d.Credit)},
			{"depends on", ticked(row[3]), deps},
		} {
			if !slices.Equal(c.doc, c.code) {
				t.Errorf("kind %q: docs/LEDGER.md says %s %v, its postings in application/ledgers/events.go %v", d.Kind, c.column, c.doc, c.code)
			}
		}
		delete(table, d.Kind)
	}
	for k := range table {
		t.Errorf("docs/LEDGER.md's table has kind %q, which no rule of the registry declares", k)
	}
}

// TestPublishedEventsPostAsLedgerMdSays posts each published event
// (docs/events) and compares its entries with docs/LEDGER.md's table, built
// from the event's own merchant_id and payer_id with the account
// constructors, not the declaration: a posting built otherwise than the
// table says — roles swapped, another party's account — fails here.
func TestPublishedEventsPostAsLedgerMdSays(t *testing.T) {
	table := ledgerTable(t)
	docs, err := filepath.Glob("../../docs/events/*.json")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no documents in docs/events: %v", err)
	}
	account := map[string]func(p ledger.Posting) (ledger.AccountID, error){
		"merchant": func(p ledger.Posting) (ledger.AccountID, error) { return ledger.MerchantAccount(p.Merchant) },
		"payer":    func(p ledger.Posting) (ledger.AccountID, error) { return ledger.PayerAccount(p.Merchant, p.Payer) },
	}
	for _, path := range docs {
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := inbox.Decode(body)
		if err != nil {
			t.Fatal(err)
		}
		version, err := ev.Version()
		if err != nil {
			t.Fatal(err)
		}
		in, err := Handler{}.Check(ev, version)
		if err != nil {
			continue // TestEveryPublishedEventIsPostedOrIgnored names it
		}
		row := table[in.Kind()]
		if row == nil {
			continue // TestLedgerMdTableIsTheRegistrysPostings names it
		}
		debit, credit := ticked(row[1]), ticked(row[2])
		tx, posts := in.Transaction()
		if !posts {
			if len(debit)+len(credit) != 0 {
				t.Errorf("%s: posts nothing; docs/LEDGER.md says %s debits %v and credits %v", filepath.Base(path), in.Kind(), debit, credit)
			}
			continue
		}
		if len(debit) != 1 || len(credit) != 1 || account[debit[0]] == nil || account[credit[0]] == nil {
			t.Errorf("%s: posts a transaction; docs/LEDGER.md says %s debits %v and credits %v, no role of the chart", filepath.Base(path), in.Kind(), debit, credit)
			continue
		}
		from, err := account[debit[0]](in.posting)
		if err != nil {
			t.Fatal(err)
		}
		to, err := account[credit[0]](in.posting)
		if err != nil {
			t.Fatal(err)
		}
		amount := in.posting.Amount
		want := []ledger.Entry{ledger.RehydrateEntry(from, -amount, in.posting.Currency), ledger.RehydrateEntry(to, amount, in.posting.Currency)}
		if got := tx.Entries(); legs(got) != legs(want) {
			t.Errorf("%s: posts %s; docs/LEDGER.md's %s row makes it %s", filepath.Base(path), legs(got), in.Kind(), legs(want))
		}
	}
}
