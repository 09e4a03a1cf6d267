package ledgerapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/ledgers/ledgerstest"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// AccountEntries answers merchant:mer_1 with one entry, the transaction
// Entries answers, or fails with err when set.
func (f fakeQueries) AccountEntries(ctx context.Context, l ledgers.ListEntries) (ledgers.EntriesPage, error) {
	if f.err != nil {
		return ledgers.EntriesPage{}, f.err
	}
	if l.Account != "merchant:mer_1" {
		return ledgers.EntriesPage{}, ledger.ErrAccountNotFound
	}
	txs, err := f.Entries(ctx, paymentID)
	if err != nil {
		return ledgers.EntriesPage{}, err
	}
	acc, _ := ledger.ParseAccountID(l.Account)
	return ledgers.EntriesPage{Account: acc, Entries: []ledgers.AccountEntry{{ID: 2, Entry: txs[0].Entries()[1], Transaction: txs[0]}}}, nil
}

type entriesPage struct {
	Object    string `json:"object"`
	AccountID string `json:"account_id"`
	Data      []struct {
		ID          int64  `json:"id"`
		Amount      int64  `json:"amount"`
		Currency    string `json:"currency"`
		Transaction struct {
			MessageID string `json:"message_id"`
			Entries   []struct {
				AccountID string `json:"account_id"`
				Amount    int64  `json:"amount"`
			} `json:"entries"`
		} `json:"transaction"`
	} `json:"data"`
	HasMore bool `json:"has_more"`
}

// TestAccountEntriesPages: 25 payments posted to the in-memory ledger, read
// through the real use case, pages of 10: every entry of the account once,
// newest first, each with its balanced transaction; another merchant's
// never. Every exchange is checked against the OpenAPI document.
func TestAccountEntriesPages(t *testing.T) {
	ctx := context.Background()
	store := ledgerstest.NewFakeStore()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	payment, _ := ledgers.PostingsOf("payment")
	post := func(n int, merchant string) {
		msg := fmt.Sprintf("0190e7a0-0000-7000-8000-%012d", n)
		tx, err := ledger.NewTransfer(ledger.Posting{MessageID: msg, PaymentID: msg, Payer: "cus_1", Merchant: merchant,
			Amount: int64(n), Currency: "BRL", OccurredAt: at}, payment)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Record(ctx, inbox.Message{ID: msg, Type: ledgers.TypePaymentCreated, Payload: []byte(`{}`), ReceivedAt: at, ProcessedAt: at}, func(ctx context.Context, l ledgers.Ledger) (string, error) {
			_, err := l.Post(ctx, tx, at)
			return "", err
		}); err != nil {
			t.Fatal(err)
		}
	}
	for n := 1; n <= 25; n++ {
		post(n, "mer_1")
		if n%10 == 0 {
			post(1000+n, "mer_2")
		}
	}
	srv := newServer(t, ledgers.NewService(store))
	list := func(t *testing.T, query string) entriesPage {
		t.Helper()
		res := get(t, srv, "/accounts/merchant:mer_1/entries"+query, "Bearer "+token)
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", query, res.StatusCode, body)
		}
		var p entriesPage
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	var amounts []int64
	query, pages := "?limit=10", 0
	for {
		p := list(t, query)
		pages++
		if p.Object != "list" || p.AccountID != "merchant:mer_1" {
			t.Fatalf("page %+v, want a list of merchant:mer_1", p)
		}
		for _, e := range p.Data {
			amounts = append(amounts, e.Amount)
			var sum int64
			for _, leg := range e.Transaction.Entries {
				sum += leg.Amount
			}
			if sum != 0 || len(e.Transaction.Entries) != 2 || e.Currency != "BRL" {
				t.Errorf("entry %d: %+v, want a leg of a balanced transaction", e.ID, e)
			}
		}
		if !p.HasMore {
			break
		}
		if pages > 3 {
			t.Fatal("more pages than 25 entries make")
		}
		query = fmt.Sprintf("?limit=10&starting_after=%d", p.Data[len(p.Data)-1].ID)
	}
	var want []int64
	for n := 25; n >= 1; n-- {
		want = append(want, int64(n))
	}
	if fmt.Sprint(amounts) != fmt.Sprint(want) || pages != 3 {
		t.Errorf("%d pages listed the amounts %v, want 3 pages of %v (newest first, mer_2's none)", pages, amounts, want)
	}
	if def := list(t, ""); len(def.Data) != 10 || !def.HasMore {
		t.Errorf("the default page: %d entries, has_more %v; want 10 and more", len(def.Data), def.HasMore)
	}

	theirs := get(t, srv, "/accounts/merchant:mer_2/entries", "Bearer "+token)
	var mer2 entriesPage
	if err := json.NewDecoder(theirs.Body).Decode(&mer2); err != nil || len(mer2.Data) != 2 {
		t.Fatalf("mer_2's entries: %+v %v, want its 2", mer2, err)
	}
	theirs.Body.Close()

	for _, c := range []struct {
		name, path string
		status     int
		typ        string
	}{
		{"limit 0", "/accounts/merchant:mer_1/entries?limit=0", 400, "/problems/invalid-query-parameter"},
		{"limit 101", "/accounts/merchant:mer_1/entries?limit=101", 400, "/problems/invalid-query-parameter"},
		{"an unknown parameter", "/accounts/merchant:mer_1/entries?offset=10", 400, "/problems/invalid-query-parameter"},
		{"a parameter twice", "/accounts/merchant:mer_1/entries?limit=1&limit=2", 400, "/problems/invalid-query-parameter"},
		{"a cursor that is not an id", "/accounts/merchant:mer_1/entries?starting_after=abc", 400, "/problems/invalid-query-parameter"},
		{"another account's entry as the cursor", fmt.Sprintf("/accounts/merchant:mer_1/entries?starting_after=%d", mer2.Data[0].ID), 400, "/problems/unknown-cursor"},
		{"an id no entry has", "/accounts/merchant:mer_1/entries?starting_after=999999", 400, "/problems/unknown-cursor"},
		{"not an account", "/accounts/mer_1/entries", 400, "/problems/invalid-account-id"},
		{"an account without entries", "/accounts/merchant:nobody/entries", 404, "/problems/account-not-found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := get(t, srv, c.path, "Bearer "+token)
			defer res.Body.Close()
			var p struct{ Type string }
			_ = json.NewDecoder(res.Body).Decode(&p)
			if res.StatusCode != c.status || p.Type != c.typ || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/problem+json") {
				t.Errorf("got %d %q, want %d %q", res.StatusCode, p.Type, c.status, c.typ)
			}
		})
	}
}
