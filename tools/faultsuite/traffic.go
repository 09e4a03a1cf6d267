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
	ID             string `json:"id"`
	Status         string `json:"status"`
	Amount         int64  `json:"amount"`
	AmountCaptured int64  `json:"amount_captured"`
	Currency       string `json:"currency"`
	PayerID        string `json:"payer_id"`
	MerchantID     string `json:"merchant_id"`
	Refund         *struct {
		ID     string `json:"id"`
		Amount int64  `json:"amount"`
	} `json:"refund"`
}

// post sends body to path with key until it is answered 201 (a creation)
// or 200 (a transition: capture, cancel); ok is false if it gave up or got
// a refusal.
func (c *client) post(ctx context.Context, seq int, path, key string, body []byte) (paymentView, bool) {
	v, ok, refused := c.transition(ctx, seq, path, key, body)
	if refused {
		c.unexpected.Add(1)
		c.problem("%s: 409", path)
	}
	return v, ok
}

// transition is post for a transition that a correct client can see
// refused with 409: the capture or cancellation of a manual payment that
// the payments service expired first, while the request was being retried
// through a fault. refused says it was; the caller checks why.
func (c *client) transition(ctx context.Context, seq int, path, key string, body []byte) (v paymentView, ok, refused bool) {
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
		case status == http.StatusCreated || status == http.StatusOK:
			if err := json.Unmarshal(resBody, &v); err != nil {
				c.problem("%s: %d with body %q", path, status, resBody)
				return v, false, false
			}
			return v, true, false
		case status == http.StatusServiceUnavailable:
			c.unavail.Add(1)
			if header.Get("Retry-After") == "" {
				c.noRetryAft.Add(1)
				c.problem("%s: 503 without Retry-After", path)
			}
		case status == http.StatusConflict && header.Get("Retry-After") != "":
			// The first attempt with this key is still running: retry.
		case status == http.StatusConflict:
			return paymentView{}, false, true
		case status >= 500:
			c.serverErrs.Add(1)
			c.problem("%s: %d %s", path, status, resBody)
		default:
			c.unexpected.Add(1)
			c.problem("%s: %d %s", path, status, resBody)
			return paymentView{}, false, false
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
	return paymentView{}, false, false
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
	payments map[string]int64 // automatic payment id → amount
	captures map[string]int64 // manual payment id → amount captured
	refunds  map[string]int64 // refund id → amount
	// canceled holds the manual payments a cancel request canceled;
	// refused, those whose capture or cancel was refused with 409, which
	// only an expiry that came first may cause.
	canceled map[string]bool
	refused  map[string]bool
	manual   int // manual payments authorized
	// balances is what the accepted payments and refunds add up to on each
	// ledger account, by account name and currency ("merchant:mer_1 BRL").
	balances map[string]int64
	sent     int
	refSent  int
	gaveUp   int
}

func newAccepted() *accepted {
	return &accepted{payments: map[string]int64{}, captures: map[string]int64{}, refunds: map[string]int64{},
		canceled: map[string]bool{}, refused: map[string]bool{}, balances: map[string]int64{}}
}

var currencies = []string{"BRL", "USD", "EUR", "JPY"}

// sendTraffic creates payments at rate per second, each on its own
// goroutine, and refunds about 40% of the accepted ones (some twice). Three
// in ten are manual (capture_method manual): each is then captured whole,
// captured in part, canceled, or left to expire, and a captured one is
// refunded as an automatic one is: at
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
	manual := i%10 == 1 || i%10 == 4 || i%10 == 7
	req := map[string]any{
		"amount": amount, "currency": currencies[i%len(currencies)],
		"payer_id": fmt.Sprintf("cus_%d", i%23), "merchant_id": fmt.Sprintf("mer_%d", i%7),
		"description": fmt.Sprintf("fault suite %s #%d", run, i),
	}
	if manual {
		req["capture_method"] = "manual"
	}
	body, _ := json.Marshal(req)
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
	left := p.Amount
	if manual {
		acc.mu.Lock()
		acc.manual++
		acc.mu.Unlock()
		if left = capture(ctx, c, run, i, p, acc); left == 0 {
			return
		}
	} else {
		acc.mu.Lock()
		acc.payments[p.ID] = p.Amount
		acc.balances[merchant] += p.Amount
		acc.balances[payer] -= p.Amount
		acc.mu.Unlock()
	}

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

// capture captures the authorized payment p whole (four in ten), in part
// (three in ten), cancels it (two in ten) or leaves it to expire, and
// returns what it captured.
func capture(ctx context.Context, c *client, run string, i int, p paymentView, acc *accepted) int64 {
	var verb string
	var body []byte
	switch n := rand.IntN(10); {
	case n < 4:
		verb = "capture"
	case n < 7:
		verb = "capture"
		body = fmt.Appendf(nil, `{"amount": %d}`, 1+rand.Int64N(p.Amount))
	case n < 9:
		verb = "cancel"
		body = []byte(`{"cancellation_reason": "abandoned"}`)
	default:
		return 0 // the payments service expires it
	}
	got, ok, refused := c.transition(ctx, i+1, "/payments/"+p.ID+"/"+verb, fmt.Sprintf("%s-%s-%d", run, verb, i), body)
	acc.mu.Lock()
	defer acc.mu.Unlock()
	switch {
	case refused:
		acc.refused[p.ID] = true
		return 0
	case !ok:
		acc.gaveUp++
		return 0
	case got.Status == "canceled":
		acc.canceled[p.ID] = true
		return 0
	}
	merchant, payer := accountNames(got)
	acc.captures[got.ID] = got.AmountCaptured
	acc.balances[merchant] += got.AmountCaptured
	acc.balances[payer] -= got.AmountCaptured
	return got.AmountCaptured
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
