package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// client is a well-behaved API client: every request carries an
// Idempotency-Key, and a request that failed in a way a retry can fix
// (connection error, 5xx, 409 "in flight") is retried with the same key,
// against the other replica, until it gets an answer or giveUp passes.
type client struct {
	http   *http.Client
	addrs  []string
	key    string // the platform's API key
	giveUp time.Duration

	attempts   atomic.Int64
	unavail    atomic.Int64 // 503 answers
	noRetryAft atomic.Int64 // 503 answers without Retry-After
	hangs      atomic.Int64 // requests cut off by the client timeout
	serverErrs atomic.Int64 // 5xx other than 503
	unexpected atomic.Int64 // 4xx that a correct request never gets

	mu       sync.Mutex
	problems []string
}

// clientTimeout is far above the API's own request timeout (5s): a request
// that reaches it hung, which the API promises never to do.
const clientTimeout = 20 * time.Second

func newClient(addrs []string, key string) *client {
	return &client{
		http:   &http.Client{Timeout: clientTimeout},
		addrs:  addrs,
		key:    key,
		giveUp: 90 * time.Second,
	}
}

func (c *client) problem(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.problems) < 20 {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
	}
}

type paymentView struct {
	ID         string `json:"id"`
	Amount     int64  `json:"amount"`
	Currency   string `json:"currency"`
	PayerID    string `json:"payer_id"`
	MerchantID string `json:"merchant_id"`
	Refund     *struct {
		ID     string `json:"id"`
		Amount int64  `json:"amount"`
	} `json:"refund"`
}

// post sends body to path with key until it is answered 201; ok is false if
// it gave up or got a refusal.
func (c *client) post(ctx context.Context, seq int, path, key string, body []byte) (paymentView, bool) {
	deadline := time.Now().Add(c.giveUp)
	backoff := 100 * time.Millisecond
	for try := 0; time.Now().Before(deadline) && ctx.Err() == nil; try++ {
		addr := c.addrs[(seq+try)%len(c.addrs)]
		c.attempts.Add(1)
		status, header, resBody, err := c.do(ctx, addr, path, key, body)
		switch {
		case err != nil:
			var ue interface{ Timeout() bool }
			if errors.As(err, &ue) && ue.Timeout() && ctx.Err() == nil {
				c.hangs.Add(1)
				c.problem("%s %s: no answer within %s", addr, path, clientTimeout)
			}
		case status == http.StatusCreated:
			var v paymentView
			if err := json.Unmarshal(resBody, &v); err != nil {
				c.problem("%s: 201 with body %q", path, resBody)
				return v, false
			}
			return v, true
		case status == http.StatusServiceUnavailable:
			c.unavail.Add(1)
			if header.Get("Retry-After") == "" {
				c.noRetryAft.Add(1)
				c.problem("%s: 503 without Retry-After", path)
			}
		case status == http.StatusConflict && header.Get("Retry-After") != "":
			// The first attempt with this key is still running: retry.
		case status >= 500:
			c.serverErrs.Add(1)
			c.problem("%s: %d %s", path, status, resBody)
		default:
			c.unexpected.Add(1)
			c.problem("%s: %d %s", path, status, resBody)
			return paymentView{}, false
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
	return paymentView{}, false
}

func (c *client) do(ctx context.Context, addr, path, key string, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Authorization", "Bearer "+c.key)
	res, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b, err
}

// accepted is what the clients were told was done.
type accepted struct {
	mu       sync.Mutex
	payments map[string]int64 // payment id → amount
	refunds  map[string]int64 // refund id → amount
	// balances is what the accepted payments and refunds add up to on each
	// ledger account, by account name and currency ("merchant:mer_1 BRL").
	balances map[string]int64
	sent     int
	refSent  int
	gaveUp   int
}

var currencies = []string{"BRL", "USD", "EUR", "JPY"}

// sendTraffic creates payments at rate per second, each on its own
// goroutine, and refunds about 40% of the accepted ones (some twice): at
// least n payments, and on until stop closes, so the stream covers every
// fault. It returns when every request was answered or given up.
func sendTraffic(ctx context.Context, c *client, run string, n int, rate float64, stop <-chan struct{}, acc *accepted) {
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for i := 0; ; i++ {
		if i >= n {
			select {
			case <-stop:
				wg.Wait()
				return
			default:
			}
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-tick.C:
		}
		wg.Go(func() { onePayment(ctx, c, run, i, acc) })
	}
}

func onePayment(ctx context.Context, c *client, run string, i int, acc *accepted) {
	amount := 1 + rand.Int64N(100_000)
	body, _ := json.Marshal(map[string]any{
		"amount": amount, "currency": currencies[i%len(currencies)],
		"payer_id": fmt.Sprintf("cus_%d", i%23), "merchant_id": fmt.Sprintf("mer_%d", i%7),
		"description": fmt.Sprintf("fault suite %s #%d", run, i),
	})
	acc.mu.Lock()
	acc.sent++
	acc.mu.Unlock()
	p, ok := c.post(ctx, i, "/payments", fmt.Sprintf("%s-pay-%d", run, i), body)
	if !ok {
		acc.mu.Lock()
		acc.gaveUp++
		acc.mu.Unlock()
		return
	}
	merchant, payer := accountNames(p)
	acc.mu.Lock()
	acc.payments[p.ID] = p.Amount
	acc.balances[merchant] += p.Amount
	acc.balances[payer] -= p.Amount
	acc.mu.Unlock()

	left := p.Amount
	for r := 0; r < 2 && left > 0 && rand.IntN(10) < 4; r++ {
		refund := 1 + rand.Int64N(left)
		left -= refund
		acc.mu.Lock()
		acc.refSent++
		acc.mu.Unlock()
		body := fmt.Appendf(nil, `{"amount": %d}`, refund)
		got, ok := c.post(ctx, i+r+1, "/payments/"+p.ID+"/refunds", fmt.Sprintf("%s-ref-%d-%d", run, i, r), body)
		acc.mu.Lock()
		if ok && got.Refund != nil {
			acc.refunds[got.Refund.ID] = got.Refund.Amount
			acc.balances[merchant] -= got.Refund.Amount
			acc.balances[payer] += got.Refund.Amount
		} else {
			acc.gaveUp++
		}
		acc.mu.Unlock()
		if !ok {
			return
		}
	}
}

// accountNames names the ledger accounts payment p moves, each with the
// currency, as ledger_balances keys them: its merchant's, and its payer's
// as that merchant knows it (docs/LEDGER.md).
func accountNames(p paymentView) (merchant, payer string) {
	m, errM := ledger.MerchantAccount(p.MerchantID)
	c, errP := ledger.PayerAccount(p.MerchantID, p.PayerID)
	if errM != nil || errP != nil {
		// The payments service accepted it, so the ledger must take it:
		// an account that no balance row can have shows up in the check.
		return "invalid " + p.MerchantID, "invalid " + p.PayerID
	}
	return m.String() + " " + p.Currency, c.String() + " " + p.Currency
}
