package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/tools/internal/proc"
)

// TestCrossMerchantPayerIDs sends the cross-merchant attack through the
// whole path — the payments API with merchant mer_1's key, the outbox relay,
// SNS/SQS, the ledger — in each inbox mode: mer_1 creates a payment naming
// as its payer "mer_B", another merchant's id. The ledger posts it between
// mer_1 and mer_1's own payer "mer_B"; merchant mer_B's account keeps what
// mer_B's own sale moved. Then two payments of 9223372036854775807 to
// mer_B: the first posts, the second would take the balance past int64 and
// is parked with its reason, and the balance still reads. The payments
// service and the ledger are given the whole int64 range as their amount
// limit, whose defaults would refuse such payments first.
func TestCrossMerchantPayerIDs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the services")
	}
	for _, mode := range []string{"sync", "async"} {
		t.Run("LEDGER_INBOX_MODE="+mode, func(t *testing.T) {
			noLimit := strconv.FormatInt(math.MaxInt64, 10)
			svc := startServices(t, map[string]map[string]string{
				"payments": {"PAYMENTS_MAX_AMOUNT": noLimit},
				"ledger":   {"LEDGER_INBOX_MODE": mode, "LEDGER_MAX_AMOUNT": noLimit},
			}, awstest.QueueConfig{})
			merB := createKey(t, svc, "mer_B")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			// mer_B's own sale, so that its account exists and has
			// something to lose.
			svc.pay(ctx, t, merB, `{"amount": 500, "currency": "JPY", "payer_id": "cus_b"}`)
			svc.waitBalance(ctx, t, "merchant:mer_B", "JPY", 500)

			// The attack, with mer_1's key.
			svc.pay(ctx, t, demoAPIKey, `{"amount": 12345, "currency": "JPY", "payer_id": "mer_B"}`)
			svc.waitBalance(ctx, t, "merchant:mer_1", "JPY", 12345)
			svc.waitBalance(ctx, t, "payer:mer_1:mer_B", "JPY", -12345)
			if got, code := svc.balance(ctx, t, "merchant:mer_B", "JPY"); code != http.StatusOK || got != 500 {
				t.Errorf("merchant:mer_B after the attack: %d JPY (status %d), want 500: untouched", got, code)
			}

			// A balance that would pass int64.
			svc.pay(ctx, t, merB, fmt.Sprintf(`{"amount": %d, "currency": "BRL", "payer_id": "cus_1"}`, int64(math.MaxInt64)))
			svc.waitBalance(ctx, t, "merchant:mer_B", "BRL", math.MaxInt64)
			second := svc.pay(ctx, t, merB, fmt.Sprintf(`{"amount": %d, "currency": "BRL", "payer_id": "cus_2"}`, int64(math.MaxInt64)))
			reason := svc.waitParked(ctx, t)
			if !strings.Contains(reason, "balance limit") || !strings.Contains(reason, "merchant:mer_B") {
				t.Errorf("parked row's reason: %q, want the balance limit on merchant:mer_B", reason)
			}
			if got, code := svc.balance(ctx, t, "merchant:mer_B", "BRL"); code != http.StatusOK || got != math.MaxInt64 {
				t.Errorf("merchant:mer_B after the refused posting: %d BRL (status %d), want 200 with %d", got, code, int64(math.MaxInt64))
			}
			if _, code := svc.balance(ctx, t, "payer:mer_B:cus_2", "BRL"); code != http.StatusNotFound {
				t.Errorf("the refused payment's payer: status %d, want 404: nothing of it posted", code)
			}
			if code := svc.ledgerGet(ctx, t, "/payments/"+second+"/entries"); code != http.StatusNotFound {
				t.Errorf("entries of the refused payment: status %d, want 404: nothing of it posted", code)
			}
		})
	}
}

// createKey runs `payments apikey create` for merchant on the services'
// payments database and returns the key it printed.
func createKey(t *testing.T, svc *services, merchant string) string {
	t.Helper()
	bin, err := proc.Build(t.Context(), svc.dir, "payments")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "apikey", "create", "--merchant", merchant, "--name", "test")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "DATABASE_URL=" + svc.paymentsDB}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("apikey create: %v", err)
	}
	key, _, _ := strings.Cut(string(out), "\n")
	if _, err := access.ParseKey(key); err != nil {
		t.Fatalf("apikey create printed %q first, not a key", out)
	}
	return key
}

// pay creates a payment with key and returns its id.
func (s *services) pay(ctx context.Context, t *testing.T, key, body string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+s.payAddr+"/payments", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var p struct {
		ID string `json:"id"`
	}
	if res.StatusCode != http.StatusCreated || json.Unmarshal(b, &p) != nil {
		t.Fatalf("POST /payments %s: %s %s", body, res.Status, b)
	}
	return p.ID
}

// ledgerDo sends GET path to the ledger API with the demo's operator token.
func (s *services) ledgerDo(ctx context.Context, t *testing.T, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+s.ledAddr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+demoLedgerToken)
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// ledgerGet is ledgerDo's status alone.
func (s *services) ledgerGet(ctx context.Context, t *testing.T, path string) int {
	t.Helper()
	res := s.ledgerDo(ctx, t, path)
	res.Body.Close()
	return res.StatusCode
}

// balance reads the account's balance in currency through the ledger API,
// and the status it answered.
func (s *services) balance(ctx context.Context, t *testing.T, account, currency string) (int64, int) {
	t.Helper()
	res := s.ledgerDo(ctx, t, "/accounts/"+url.PathEscape(account)+"/balance")
	defer res.Body.Close()
	var b struct {
		Balances []struct {
			Currency string `json:"currency"`
			Posted   int64  `json:"posted"`
		} `json:"balances"`
	}
	if res.StatusCode != http.StatusOK {
		return 0, res.StatusCode
	}
	if err := json.NewDecoder(res.Body).Decode(&b); err != nil {
		t.Fatalf("balance of %s: %v", account, err)
	}
	for _, c := range b.Balances {
		if c.Currency == currency {
			return c.Posted, res.StatusCode
		}
	}
	return 0, res.StatusCode
}

// waitBalance polls until the account's balance in currency is want.
func (s *services) waitBalance(ctx context.Context, t *testing.T, account, currency string, want int64) {
	t.Helper()
	var got int64
	for ctx.Err() == nil {
		var code int
		if got, code = s.balance(ctx, t, account, currency); code == http.StatusOK && got == want {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("balance of %s is %d %s, want %d", account, got, currency, want)
}

// waitParked polls the ledger's inbox until a row is parked, and returns
// its reason.
func (s *services) waitParked(ctx context.Context, t *testing.T) string {
	t.Helper()
	pool, err := pgxpool.New(ctx, s.ledgerDB)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for {
		var reason string
		err := pool.QueryRow(ctx, `SELECT coalesce(error, '') FROM inbox_messages WHERE parked_at IS NOT NULL`).Scan(&reason)
		if err == nil {
			return reason
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no inbox row was parked: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
