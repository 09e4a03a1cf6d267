package paymentsapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

func (failingService) List(context.Context, payments.ListPayments) (payments.Page, error) {
	return payments.Page{}, errUnexpected
}

type listed struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	Merchant  string    `json:"merchant_id"`
	CreatedAt time.Time `json:"created_at"`
}

type listPage struct {
	Object  string   `json:"object"`
	Data    []listed `json:"data"`
	HasMore bool     `json:"has_more"`
}

// TestListPagesThroughEveryPayment: 25 payments of mer_1 (some refunded)
// and 3 of mer_2 on Postgres; mer_1 pages with limit 10 and sees each of its
// own exactly once, newest first, and none of mer_2's; the filters and the
// page before a cursor keep the same order. Every exchange is checked
// against the OpenAPI document.
func TestListPagesThroughEveryPayment(t *testing.T) {
	t.Parallel()
	srv, _, keys := newServerWithKeys(t, logtest.Discard())
	as := func(key string) []string { return []string{"Authorization", "Bearer " + key} }
	var mine []listed // oldest first
	for i := range 25 {
		res := do(t, srv, http.MethodPost, "/payments", "application/json", `{"amount": 100, "currency": "BRL", "payer_id": "cus_1"}`, as(keys.mer1)...)
		if res.status != http.StatusCreated {
			t.Fatalf("create: %d %s", res.status, res.body)
		}
		var p listed
		if err := json.Unmarshal(res.body, &p); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			ref := do(t, srv, http.MethodPost, "/payments/"+p.ID+"/refunds", "application/json", `{"amount": 1}`, as(keys.mer1)...)
			if ref.status != http.StatusCreated {
				t.Fatalf("refund: %d %s", ref.status, ref.body)
			}
			p.Status = "partially_refunded"
		}
		mine = append(mine, p)
	}
	var theirs []string
	for range 3 {
		res := do(t, srv, http.MethodPost, "/payments", "application/json", `{"amount": 100, "currency": "BRL", "payer_id": "cus_1"}`, as(keys.mer2)...)
		if res.status != http.StatusCreated {
			t.Fatalf("create: %d %s", res.status, res.body)
		}
		theirs = append(theirs, res.json(t)["id"].(string))
	}
	// Newest first: created_at, then id, descending.
	slices.SortFunc(mine, func(a, b listed) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	idsOf := func(ps []listed) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.ID)
		}
		return out
	}
	list := func(t *testing.T, key string, query url.Values) listPage {
		t.Helper()
		res := do(t, srv, http.MethodGet, "/payments?"+query.Encode(), "", "", as(key)...)
		if res.status != http.StatusOK {
			t.Fatalf("GET /payments?%s: %d %s", query.Encode(), res.status, res.body)
		}
		var page listPage
		if err := json.Unmarshal(res.body, &page); err != nil {
			t.Fatal(err)
		}
		if page.Object != "list" || page.Data == nil {
			t.Fatalf("page %s, want object list and data", res.body)
		}
		return page
	}
	// pageAll follows starting_after from the first page to the last.
	pageAll := func(t *testing.T, key string, query url.Values) (seen []listed, pages int) {
		t.Helper()
		for {
			page := list(t, key, query)
			pages++
			seen = append(seen, page.Data...)
			if !page.HasMore {
				return seen, pages
			}
			if len(page.Data) == 0 || pages > 10 {
				t.Fatalf("page %d: has_more with %d payments", pages, len(page.Data))
			}
			query.Set("starting_after", page.Data[len(page.Data)-1].ID)
		}
	}

	t.Run("every payment once, newest first", func(t *testing.T) {
		seen, pages := pageAll(t, keys.mer1, url.Values{"limit": {"10"}})
		if got, want := idsOf(seen), idsOf(mine); !slices.Equal(got, want) || pages != 3 {
			t.Errorf("%d pages listed %v, want 3 pages of %v", pages, got, want)
		}
	})
	t.Run("the default limit is 10", func(t *testing.T) {
		page := list(t, keys.mer1, url.Values{})
		if got := idsOf(page.Data); !slices.Equal(got, idsOf(mine[:10])) || !page.HasMore {
			t.Errorf("got %v has_more %v, want the 10 newest and more", got, page.HasMore)
		}
	})
	t.Run("the page before a cursor", func(t *testing.T) {
		page := list(t, keys.mer1, url.Values{"limit": {"3"}, "ending_before": {mine[10].ID}})
		if got := idsOf(page.Data); !slices.Equal(got, idsOf(mine[7:10])) || !page.HasMore {
			t.Errorf("got %v has_more %v, want %v and more", got, page.HasMore, idsOf(mine[7:10]))
		}
		first := list(t, keys.mer1, url.Values{"limit": {"3"}, "ending_before": {mine[3].ID}})
		if got := idsOf(first.Data); !slices.Equal(got, idsOf(mine[:3])) || first.HasMore {
			t.Errorf("got %v has_more %v, want %v and no more", got, first.HasMore, idsOf(mine[:3]))
		}
	})
	t.Run("by status", func(t *testing.T) {
		var want []listed
		for _, p := range mine {
			if p.Status == "partially_refunded" {
				want = append(want, p)
			}
		}
		seen, _ := pageAll(t, keys.mer1, url.Values{"limit": {"2"}, "status": {"partially_refunded"}})
		if got := idsOf(seen); len(want) != 5 || !slices.Equal(got, idsOf(want)) {
			t.Errorf("got %v, want %v", got, idsOf(want))
		}
		for _, p := range seen {
			if p.Status != "partially_refunded" {
				t.Errorf("%s is %s", p.ID, p.Status)
			}
		}
	})
	t.Run("by creation time", func(t *testing.T) {
		// [the 20th newest's created_at, the 5th newest's): 15 payments.
		q := url.Values{"limit": {"4"}, "created_gte": {mine[19].CreatedAt.Format(time.RFC3339Nano)}, "created_lt": {mine[4].CreatedAt.Format(time.RFC3339Nano)}}
		seen, _ := pageAll(t, keys.mer1, q)
		if got := idsOf(seen); !slices.Equal(got, idsOf(mine[5:20])) {
			t.Errorf("got %v, want %v", got, idsOf(mine[5:20]))
		}
	})
	t.Run("another merchant's payments never appear", func(t *testing.T) {
		seen, _ := pageAll(t, keys.mer2, url.Values{"limit": {"2"}})
		slices.Reverse(theirs)
		if got := idsOf(seen); !slices.Equal(got, theirs) {
			t.Errorf("mer_2 lists %v, want its own %v", got, theirs)
		}
		platform, _ := pageAll(t, keys.platform, url.Values{"merchant_id": {"mer_1"}, "limit": {"100"}})
		if got := idsOf(platform); !slices.Equal(got, idsOf(mine)) {
			t.Errorf("the platform lists %v for mer_1, want %v", got, idsOf(mine))
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, c := range []struct {
			name, key, query, typ string
		}{
			{"limit 0", keys.mer1, "limit=0", "/problems/invalid-query-parameter"},
			{"limit 101", keys.mer1, "limit=101", "/problems/invalid-query-parameter"},
			{"limit not an integer", keys.mer1, "limit=ten", "/problems/invalid-query-parameter"},
			{"an unknown parameter", keys.mer1, "created%5Bgte%5D=2026-01-01T00:00:00Z", "/problems/invalid-query-parameter"},
			{"a parameter twice", keys.mer1, "limit=1&limit=2", "/problems/invalid-query-parameter"},
			{"both cursors", keys.mer1, "starting_after=" + mine[1].ID + "&ending_before=" + mine[2].ID, "/problems/invalid-query-parameter"},
			{"a time that is not RFC 3339", keys.mer1, "created_gte=yesterday", "/problems/invalid-query-parameter"},
			{"an empty time range", keys.mer1, "created_gte=2026-01-02T00:00:00Z&created_lt=2026-01-01T00:00:00Z", "/problems/invalid-query-parameter"},
			{"another merchant named", keys.mer1, "merchant_id=mer_2", "/problems/invalid-query-parameter"},
			{"the platform names no merchant", keys.platform, "", "/problems/invalid-query-parameter"},
			{"an unknown cursor", keys.mer1, "starting_after=7d4f8f7c-1d2b-4a53-b8d4-1d5b4cf1b7a2", "/problems/unknown-cursor"},
			{"another merchant's payment as the cursor", keys.mer1, "starting_after=" + theirs[0], "/problems/unknown-cursor"},
			{"the platform: a cursor of another merchant than the one it lists", keys.platform, "merchant_id=mer_1&ending_before=" + theirs[0], "/problems/unknown-cursor"},
		} {
			t.Run(c.name, func(t *testing.T) {
				assertProblem(t, do(t, srv, http.MethodGet, "/payments?"+c.query, "", "", as(c.key)...), http.StatusBadRequest, c.typ)
			})
		}
	})
	t.Run("HEAD", func(t *testing.T) {
		head := do(t, srv, http.MethodHead, "/payments", "", "", as(keys.mer1)...)
		if head.status != http.StatusOK || len(head.body) != 0 {
			t.Errorf("HEAD /payments: %d, %d bytes; want 200 without a body", head.status, len(head.body))
		}
	})
}
