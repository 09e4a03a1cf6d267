package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
)

// operatorToken is the ledger API's token in the suite's runs.
const operatorToken = "faultsuite-operator-token-0123456789abcdef"

// checkBalancesThroughAPIs asks each service what a client of it would: for
// every merchant, the ledger API's GET /merchants/{id}/balance must equal
// what the payments API's GET /payments says of that merchant's payments —
// per currency, available = Σ (amount_captured − refunded_amount), and
// pending = Σ amount of those still authorized. checkHolds compares the
// same sums table by table; this compares the answers, so that a query, a
// cursor or an encoding that loses or miscounts something between the
// tables and the client is caught too. The merchants are those the
// payments database holds payments of.
func checkBalancesThroughAPIs(ctx context.Context, t testing.TB, rep *report, pay *pgx.Conn, payAddr, ledAddr, key string) {
	rows, err := pay.Query(ctx, `SELECT DISTINCT merchant_id FROM payments ORDER BY 1`)
	if err != nil {
		t.Fatalf("read merchants: %v", err)
	}
	merchants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("read merchants: %v", err)
	}
	hc := &http.Client{Timeout: clientTimeout}
	get := func(u, bearer string, into any) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+bearer)
		res, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			return 0, err
		}
		if res.StatusCode != http.StatusOK {
			return res.StatusCode, nil
		}
		return res.StatusCode, json.Unmarshal(b, into)
	}

	type sums struct{ available, pending int64 }
	for _, merchant := range merchants {
		// The payments API: every page of the merchant's payments.
		want := map[string]sums{}
		after, n := "", 0
		for {
			q := url.Values{"merchant_id": {merchant}, "limit": {"100"}}
			if after != "" {
				q.Set("starting_after", after)
			}
			var page struct {
				Data []struct {
					ID             string `json:"id"`
					Status         string `json:"status"`
					Amount         int64  `json:"amount"`
					AmountCaptured int64  `json:"amount_captured"`
					RefundedAmount int64  `json:"refunded_amount"`
					Currency       string `json:"currency"`
				} `json:"data"`
				HasMore bool `json:"has_more"`
			}
			status, err := get("http://"+payAddr+"/payments?"+q.Encode(), key, &page)
			if err != nil || status != http.StatusOK {
				rep.fail("GET /payments of merchant %s: %d %v", merchant, status, err)
				return
			}
			for _, p := range page.Data {
				s := want[p.Currency]
				s.available += p.AmountCaptured - p.RefundedAmount
				if p.Status == "authorized" {
					s.pending += p.Amount
				}
				want[p.Currency] = s
				after = p.ID
			}
			n += len(page.Data)
			if !page.HasMore || len(page.Data) == 0 {
				break
			}
		}

		// The ledger API: the merchant's balances. A merchant none of whose
		// payments moved or held money has none (404).
		var answer struct {
			MerchantID string `json:"merchant_id"`
			Balances   []struct {
				Currency  string `json:"currency"`
				Available int64  `json:"available"`
				Pending   int64  `json:"pending"`
			} `json:"balances"`
		}
		status, err := get("http://"+ledAddr+"/merchants/"+url.PathEscape(merchant)+"/balance", operatorToken, &answer)
		if err != nil || (status != http.StatusOK && status != http.StatusNotFound) {
			rep.fail("GET /merchants/%s/balance: %d %v", merchant, status, err)
			continue
		}
		got := map[string]sums{}
		for _, b := range answer.Balances {
			got[b.Currency] = sums{b.Available, b.Pending}
		}
		for cur, w := range want {
			if g := got[cur]; g != w {
				rep.fail("merchant %s %s: the ledger API answers available %d pending %d; the payments API's %d payments of it add up to available %d pending %d",
					merchant, cur, g.available, g.pending, n, w.available, w.pending)
			}
		}
		for cur, g := range got {
			if _, ok := want[cur]; !ok && g != (sums{}) {
				rep.fail("merchant %s %s: the ledger API answers available %d pending %d; the payments API lists no payment of it in %s", merchant, cur, g.available, g.pending, cur)
			}
		}
	}
	if len(merchants) == 0 {
		rep.fail("no merchant to compare the APIs' balances of: the traffic created no payment")
	}
}
