// Command walkthrough runs the README's walkthrough against running services
// and prints it as the README shows it: each curl command, then what the
// service answered. `make demo` runs it against `docker compose up`, or
// against `make dev`, which hands it the receiver's URL and log command.
//
//	go -C tools run ./walkthrough [-payments http://localhost:8080] [-ledger http://localhost:8081]
//	    [-payments-ops http://localhost:9090] [-webhooks http://localhost:8082]
//	    [-webhooks-ops http://localhost:9092] [-api-key KEY] [-ledger-token TOKEN]
//	    [-receiver-url URL] [-receiver-secret-file FILE] [-receiver-logs COMMAND]
//
// Its defaults are docker-compose.yml's: the API key the demo-key job stores
// for mer_1 and the ledger's operator token, both demo secrets published in
// that file, and the demo webhook receiver, whose secret file it writes as
// the reader does and whose log it reads with docker compose.
//
// The ledger and the webhooks service apply events asynchronously, so the
// steps that read them poll until the expected change arrives (within -wait)
// instead of sleeping. Its test (walkthrough_test.go) starts the real
// binaries with the environment docker-compose.yml gives them and checks
// that this output is the README's.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, &http.Client{Timeout: 10 * time.Second})
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) { // -h printed the usage: not a failure
		fmt.Fprintln(os.Stderr, "walkthrough:", err)
		os.Exit(1)
	}
}

type walk struct {
	payments, ledger, paymentsOps string // base URLs
	webhooks, webhooksOps         string
	key                           string // the payment's Idempotency-Key
	apiKey, ledgerToken           string
	// The demo webhook receiver: the URL the webhooks service reaches it
	// at, the secrets file it reads, and the command that prints its log.
	receiverURL, receiverSecretFile, receiverLogs string
	wait                                          time.Duration
	out                                           io.Writer
	client                                        *http.Client
}

// The demo's credentials, as docker-compose.yml publishes them (a test keeps
// them equal): mer_1's API key and the ledger's operator token.
const (
	demoAPIKey      = "pk_test_demodemodemodemo_apublicdemokeyfromdockercomposeyamlneveruseitforreal"
	demoLedgerToken = "demo-operator-token-of-docker-compose-not-a-secret"
)

// run runs the walkthrough with client; its test passes one that checks every
// exchange against the services' OpenAPI documents.
func run(ctx context.Context, args []string, out io.Writer, client *http.Client) error {
	fs := flag.NewFlagSet("walkthrough", flag.ContinueOnError)
	w := &walk{out: out, client: client}
	fs.StringVar(&w.payments, "payments", "http://localhost:8080", "payments service base URL")
	fs.StringVar(&w.ledger, "ledger", "http://localhost:8081", "ledger service base URL")
	fs.StringVar(&w.paymentsOps, "payments-ops", "http://localhost:9090", "payments service's operational endpoints (OPS_ADDR)")
	fs.StringVar(&w.webhooks, "webhooks", "http://localhost:8082", "webhooks service base URL")
	fs.StringVar(&w.webhooksOps, "webhooks-ops", "http://localhost:9092", "webhooks service's operational endpoints (OPS_ADDR)")
	fs.StringVar(&w.receiverURL, "receiver-url", "http://webhook-receiver:8083/webhooks", "the demo receiver's URL as the webhooks service reaches it")
	// Relative to tools/, where `go -C tools run` runs: the repository's
	// .webhook-receiver/, which docker-compose.yml mounts into the receiver.
	fs.StringVar(&w.receiverSecretFile, "receiver-secret-file", "../.webhook-receiver/secret", "the demo receiver's secrets file, which the walkthrough writes the endpoint's secret to")
	fs.StringVar(&w.receiverLogs, "receiver-logs", "docker compose logs --no-log-prefix webhook-receiver", "the command that prints the demo receiver's log (split on spaces; printed as the reader would type it)")
	fs.StringVar(&w.apiKey, "api-key", demoAPIKey, "mer_1's API key (default: the demo key docker-compose.yml stores)")
	fs.StringVar(&w.ledgerToken, "ledger-token", demoLedgerToken, "the ledger's operator token (default: docker-compose.yml's demo token)")
	fs.StringVar(&w.key, "key", "order-"+time.Now().UTC().Format("20060102150405"), "Idempotency-Key of the payment")
	fs.DurationVar(&w.wait, "wait", 30*time.Second, "how long to wait for the ledger and the webhooks service to catch up")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return w.run(ctx)
}

const createBody = `{"amount": 1050, "currency": "BRL", "payer_id": "cus_1", "description": "coffee"}`

const authorizeBody = `{"amount": 2000, "currency": "BRL", "payer_id": "cus_1", "description": "hotel", "capture_method": "manual"}`

// The ledger accounts the walkthrough's payment moves: mer_1's, and payer
// cus_1's as mer_1 knows it (docs/LEDGER.md).
const (
	merchantAccount = "merchant:mer_1"
	payerAccount    = "payer:mer_1:cus_1"
)

func (w *walk) run(ctx context.Context) error {
	// Balances before, so the ledger steps can wait for this walkthrough's
	// own events even when the ledger has seen earlier runs.
	merBefore, err := w.balance(ctx, merchantAccount)
	if err != nil {
		return err
	}
	cusBefore, err := w.balance(ctx, payerAccount)
	if err != nil {
		return err
	}
	_, pendingBefore, err := w.merchantBalance(ctx)
	if err != nil {
		return err
	}
	// Counters before, so that the webhooks part can wait until the
	// webhooks service has consumed every event published before it.
	publishedBefore, err := w.counter(ctx, w.paymentsOps, "outbox_published_total")
	if err != nil {
		return err
	}
	consumedBefore, err := w.counter(ctx, w.webhooksOps, "inbox_processed_total")
	if err != nil {
		return err
	}

	w.say("Every request carries a credential: the payments API takes a merchant's API key, the ledger an operator token. These two are the demo's, published in `docker-compose.yml`, whose `demo-key` job stores the key for merchant `mer_1`:")
	w.printf("```console\n$ export API_KEY=%s\n$ export LEDGER_TOKEN=%s\n```\n\n", w.apiKey, w.ledgerToken)

	w.say("Create a payment. The merchant is the key's; amounts are integers of the currency's minor unit; the `Idempotency-Key` makes a retry safe:")
	created, err := w.curl(ctx, "POST", w.payments, "/payments", createBody, w.key, http.StatusCreated)
	if err != nil {
		return err
	}
	if created.header.Get("Idempotent-Replayed") == "true" {
		return fmt.Errorf("Idempotency-Key %q was used by an earlier run; pass another -key", w.key)
	}
	var p struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(created.body, &p); err != nil || p.ID == "" {
		return fmt.Errorf("create answered %s", created.body)
	}

	w.say("Read it back:")
	if _, err := w.curl(ctx, "GET", w.payments, "/payments/"+p.ID, "", "", http.StatusOK); err != nil {
		return err
	}

	w.say("Without the key, nothing (another merchant's key would get `404`, as for a payment that does not exist):")
	if _, err := w.curlAs(ctx, "", "GET", w.payments, "/payments/"+p.ID, "", "", http.StatusUnauthorized); err != nil {
		return err
	}

	w.say("The relay published `payment.created`; the ledger posted it: the merchant's account credited, the payer's debited. Accounts are named by role and owner ([docs/LEDGER.md](docs/LEDGER.md)): `merchant:mer_1`, and `payer:mer_1:cus_1` — payer `cus_1` as `mer_1` knows it, another account than a `cus_1` of any other merchant:")
	if err := w.waitBalance(ctx, merchantAccount, merBefore+1050); err != nil {
		return err
	}
	if err := w.waitBalance(ctx, payerAccount, cusBefore-1050); err != nil {
		return err
	}
	if _, err := w.curl(ctx, "GET", w.ledger, "/payments/"+p.ID+"/entries", "", "", http.StatusOK); err != nil {
		return err
	}

	w.say("Refund part of it:")
	if _, err := w.curl(ctx, "POST", w.payments, "/payments/"+p.ID+"/refunds", `{"amount": 300}`, "", http.StatusCreated); err != nil {
		return err
	}
	w.say("The balances move back by the refunded amount:")
	if err := w.waitBalance(ctx, merchantAccount, merBefore+750); err != nil {
		return err
	}
	if err := w.waitBalance(ctx, payerAccount, cusBefore-750); err != nil {
		return err
	}

	w.say("Refunding more than is left is refused, as problem+json:")
	if _, err := w.curl(ctx, "POST", w.payments, "/payments/"+p.ID+"/refunds", `{"amount": 800}`, "", http.StatusConflict); err != nil {
		return err
	}

	w.say("Authorize only: with `capture_method` `manual` the payment holds the money and waits for its capture (before `capture_before`, `PAYMENTS_AUTHORIZATION_TTL` after it was made, or it is canceled):")
	auth, err := w.curl(ctx, "POST", w.payments, "/payments", authorizeBody, w.key+"-hotel", http.StatusCreated)
	if err != nil {
		return err
	}
	var held struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(auth.body, &held); err != nil || held.ID == "" {
		return fmt.Errorf("authorize answered %s", auth.body)
	}
	w.say("The relay published `payment.authorized`; the ledger placed a hold: the merchant's `pending` balance rises, its `available` one does not:")
	if err := w.waitMerchant(ctx, merBefore+750, pendingBefore+2000); err != nil {
		return err
	}
	w.say("Capture part of it; the rest of the hold is released (one capture per payment, as a card's):")
	if _, err := w.curl(ctx, "POST", w.payments, "/payments/"+held.ID+"/capture", `{"amount": 1500}`, w.key+"-hotel-capture", http.StatusOK); err != nil {
		return err
	}
	w.say("The captured amount moved from pending to available; the 500 not captured is held no more:")
	if err := w.waitMerchant(ctx, merBefore+750+1500, pendingBefore); err != nil {
		return err
	}

	w.say("Retry the first request with the same key: the first response comes back (same status, same body) and nothing new is created:")
	again, err := w.request(ctx, "POST", w.payments+"/payments", createBody, w.key, w.auth(w.payments))
	if err != nil {
		return err
	}
	w.printf("```console\n$ curl -si -X POST %s/payments %s -H 'Content-Type: application/json' \\\n    -H 'Idempotency-Key: %s' -d '%s' | grep -E '^HTTP|Replayed'\n", w.payments, authFlag(true), w.key, createBody)
	w.printf("HTTP/1.1 %s\nIdempotent-Replayed: %s\n```\n\n", again.status, again.header.Get("Idempotent-Replayed"))
	if again.code != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.body, created.body) {
		return fmt.Errorf("retry with the same key: %s replayed=%q, want the first response replayed", again.status, again.header.Get("Idempotent-Replayed"))
	}

	w.say("Nothing is left in the outbox, and its age — the signal to alert on — is zero. The metrics are on the operational port, `OPS_ADDR`, which needs no key and must face operators only:")
	if err := w.outboxMetrics(ctx); err != nil {
		return err
	}
	return w.webhooksPart(ctx, publishedBefore, consumedBefore)
}

const croissantBody = `{"amount": 990, "currency": "BRL", "payer_id": "cus_1", "description": "croissant"}`

// webhooksPart registers the demo receiver as mer_1's endpoint, hands it
// the secret, and follows one payment's payment.created to it.
func (w *walk) webhooksPart(ctx context.Context, publishedBefore, consumedBefore float64) error {
	// The webhooks service fans an event out to the endpoints that exist
	// when it applies it: wait until it has applied every event this
	// walkthrough published so far, so that the new endpoint is sent this
	// part's payment alone, as the reader, who registers it a while after,
	// sees.
	if err := w.waitConsumed(ctx, publishedBefore, consumedBefore); err != nil {
		return err
	}

	w.printf("\n")
	w.say("The webhooks service tells a merchant what happened to its payments: it POSTs each event, signed, to the endpoints the merchant registered, with the same API key. Register the demo receiver, which verifies every signature (`docker-compose.yml` runs it on the compose network, `make dev` on 127.0.0.1):")
	body := fmt.Sprintf(`{"url": %q, "enabled_events": ["payment.created", "payment.refunded"]}`, w.receiverURL)
	reg, err := w.curl(ctx, "POST", w.webhooks, "/webhook_endpoints", body, w.key+"-webhooks", http.StatusCreated)
	if err != nil {
		return err
	}
	var ep struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(reg.body, &ep); err != nil || ep.ID == "" || !strings.HasPrefix(ep.Secret, "whsec_") {
		return fmt.Errorf("register answered %s", reg.body)
	}

	w.say("The answer holds the endpoint's signing secret, this once and never again. Hand it to the receiver, which reads its secrets file on every request:")
	if err := writeReceiverSecret(w.receiverSecretFile, ep.Secret); err != nil {
		return fmt.Errorf("hand the secret to the receiver: %w", err)
	}
	w.printf("```console\n$ echo '%s' > .webhook-receiver/secret\n```\n\n", ep.Secret)

	w.say("Create a payment:")
	if _, err := w.curl(ctx, "POST", w.payments, "/payments", croissantBody, w.key+"-croissant", http.StatusCreated); err != nil {
		return err
	}

	w.say("Its `payment.created` went through the outbox, SNS/SQS and the webhooks service's inbox to the endpoint. Each attempt is listed, with the receiver's answer:")
	eventID, err := w.waitDelivered(ctx, ep.ID)
	if err != nil {
		return err
	}

	w.say("The receiver checked the `webhook-signature` with the secret before answering `204`; its log line names the event by its `webhook-id`, the same on every retry, so a receiver can drop a duplicate:")
	return w.receiverLine(ctx, eventID)
}

// writeReceiverSecret writes secret as the receiver's secrets file, whole
// (a rename: the receiver, which reads it on every request, never sees half
// of it), so that the receiver can read it. In docker-compose.yml the
// receiver runs as uid 65532 and reads the file through a bind mount: that
// uid is neither the file's owner nor of its group, so the file must be
// readable by others (0644; 0600 got every delivery refused on Linux) and
// its directory searchable by them (o+x; listing it, o+r, is not needed).
// Nothing more is opened: others may read a demo's signing secret, not
// change it. Whatever the umask, the modes are set explicitly.
func writeReceiverSecret(file, secret string) error {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o001 == 0 {
		if err := os.Chmod(dir, fi.Mode().Perm()|0o001); err != nil {
			return fmt.Errorf("let the receiver reach %s: %w", dir, err)
		}
	}
	tmp, err := os.CreateTemp(dir, ".secret-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is nothing to remove
	if _, err := tmp.WriteString(secret + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// counter returns the sum of a counter's series at the ops base URL, 0 if
// none is exposed yet.
func (w *walk) counter(ctx context.Context, base, name string) (float64, error) {
	res, err := w.request(ctx, "GET", base+"/metrics", "", "", "")
	if err != nil {
		return 0, err
	}
	if res.code != http.StatusOK {
		return 0, fmt.Errorf("%s/metrics: %s", base, res.status)
	}
	sum := 0.0
	for _, l := range strings.Split(string(res.body), "\n") {
		if l != name && !strings.HasPrefix(l, name+" ") && !strings.HasPrefix(l, name+"{") {
			continue
		}
		v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("%s/metrics: %q: %w", base, l, err)
		}
		sum += v
	}
	return sum, nil
}

// waitConsumed polls until the webhooks service's inbox has processed as
// many events as the payments relay published since the counters were read.
func (w *walk) waitConsumed(ctx context.Context, publishedBefore, consumedBefore float64) error {
	published, err := w.counter(ctx, w.paymentsOps, "outbox_published_total")
	if err != nil {
		return err
	}
	deadline := time.Now().Add(w.wait)
	for {
		consumed, err := w.counter(ctx, w.webhooksOps, "inbox_processed_total")
		if err != nil {
			return err
		}
		if consumed-consumedBefore >= published-publishedBefore {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the webhooks service processed %v events after %s, the relay published %v: is it consuming?", consumed-consumedBefore, w.wait, published-publishedBefore)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// attempt is what the walkthrough reads of a webhook attempt.
type attempt struct {
	EventID string `json:"event_id"`
	Outcome string `json:"outcome"`
}

// waitDelivered polls the endpoint's attempts until one delivered, then
// prints the request and the answer and returns the event's id.
func (w *walk) waitDelivered(ctx context.Context, endpoint string) (string, error) {
	path := "/webhook_endpoints/" + endpoint + "/deliveries"
	deadline := time.Now().Add(w.wait)
	for {
		res, err := w.request(ctx, "GET", w.webhooks+path, "", "", w.auth(w.webhooks))
		if err != nil {
			return "", err
		}
		var list struct {
			Data []attempt `json:"data"`
		}
		if res.code != http.StatusOK || json.Unmarshal(res.body, &list) != nil {
			return "", fmt.Errorf("GET %s: %s: %s", path, res.status, res.body)
		}
		if i := slices.IndexFunc(list.Data, func(a attempt) bool { return a.Outcome == "delivered" }); i >= 0 {
			if _, err := w.curl(ctx, "GET", w.webhooks, path, "", "", http.StatusOK); err != nil {
				return "", err
			}
			return list.Data[i].EventID, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no attempt delivered to endpoint %s after %s: %s", endpoint, w.wait, res.body)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// receiverLine polls the receiver's log until it holds the line of
// eventID's delivery, and prints it as the last webhook line.
func (w *walk) receiverLine(ctx context.Context, eventID string) error {
	args := strings.Fields(w.receiverLogs)
	if len(args) == 0 {
		return errors.New("-receiver-logs is empty")
	}
	deadline := time.Now().Add(w.wait)
	for {
		out, err := exec.CommandContext(ctx, args[0], args[1:]...).Output()
		if err != nil {
			return fmt.Errorf("%s: %w", w.receiverLogs, err)
		}
		var last string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, `"msg":"webhook"`) {
				last = l
			}
		}
		if strings.Contains(last, `"webhook-id":"`+eventID+`"`) {
			w.printf("```console\n$ %s | grep '\"msg\":\"webhook\"' | tail -n 1\n%s\n```\n", w.receiverLogs, strings.TrimSpace(last))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the receiver's log has no line of event %s after %s; its last: %s", eventID, w.wait, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type response struct {
	code   int
	status string
	header http.Header
	body   []byte
}

// auth is the Authorization header for the service at base: the API key
// for payments and webhooks, the operator token for the ledger.
func (w *walk) auth(base string) string {
	switch base {
	case w.payments, w.webhooks:
		return "Bearer " + w.apiKey
	case w.ledger:
		return "Bearer " + w.ledgerToken
	}
	return ""
}

// authFlag is the curl option that sends the credential, as the README's
// reader types it: through the variables the first step exports.
func authFlag(payments bool) string {
	if payments {
		return `-H "Authorization: Bearer $API_KEY"`
	}
	return `-H "Authorization: Bearer $LEDGER_TOKEN"`
}

func (w *walk) request(ctx context.Context, method, url, body, key, auth string) (response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return response{}, err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := w.client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, err
	}
	return response{res.StatusCode, res.Status, res.Header, bytes.TrimSpace(b)}, nil
}

// curl performs the request with the service's credential, prints it as a
// curl command with its answer, and fails unless the status is want.
func (w *walk) curl(ctx context.Context, method, base, path, body, key string, want int) (response, error) {
	return w.curlAs(ctx, w.auth(base), method, base, path, body, key, want)
}

// curlAs is curl with the Authorization header auth ("" for none).
func (w *walk) curlAs(ctx context.Context, auth, method, base, path, body, key string, want int) (response, error) {
	res, err := w.request(ctx, method, base+path, body, key, auth)
	if err != nil {
		return res, err
	}
	cmd := "curl -s"
	if method != http.MethodGet {
		cmd += " -X " + method
	}
	cmd += " " + base + path
	if auth != "" {
		cmd += " " + authFlag(base == w.payments || base == w.webhooks)
	}
	if body != "" {
		cmd += " -H 'Content-Type: application/json'"
	}
	if key != "" {
		cmd += " \\\n    -H 'Idempotency-Key: " + key + "'"
	}
	if body != "" {
		cmd += " -d '" + body + "'"
	}
	w.printf("```console\n$ %s\n%s\n```\n\n", cmd, res.body)
	if res.code != want {
		return res, fmt.Errorf("%s %s: %s, want %d: %s", method, path, res.status, want, res.body)
	}
	return res, nil
}

// balance returns the account's BRL balance, 0 for an account never posted to.
func (w *walk) balance(ctx context.Context, account string) (int64, error) {
	res, err := w.request(ctx, "GET", w.ledger+"/accounts/"+url.PathEscape(account)+"/balance", "", "", w.auth(w.ledger))
	if err != nil {
		return 0, err
	}
	if res.code == http.StatusNotFound {
		return 0, nil
	}
	if res.code != http.StatusOK {
		return 0, fmt.Errorf("ledger balance of %s: %s: %s", account, res.status, res.body)
	}
	var b struct {
		Balances []struct {
			Currency string `json:"currency"`
			Posted   int64  `json:"posted"`
		} `json:"balances"`
	}
	if err := json.Unmarshal(res.body, &b); err != nil {
		return 0, fmt.Errorf("ledger balance of %s: %w", account, err)
	}
	for _, c := range b.Balances {
		if c.Currency == "BRL" {
			return c.Posted, nil
		}
	}
	return 0, nil
}

// waitBalance polls until the account's balance is want, then prints the
// request and the answer.
func (w *walk) waitBalance(ctx context.Context, account string, want int64) error {
	deadline := time.Now().Add(w.wait)
	for {
		got, err := w.balance(ctx, account)
		if err != nil {
			return err
		}
		if got == want {
			_, err := w.curl(ctx, "GET", w.ledger, "/accounts/"+url.PathEscape(account)+"/balance", "", "", http.StatusOK)
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("balance of %s is %d after %s, want %d: is the relay publishing and the ledger consuming?", account, got, w.wait, want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// merchantBalance returns mer_1's BRL available and pending balances, 0 for
// a merchant never posted to nor held for.
func (w *walk) merchantBalance(ctx context.Context) (available, pending int64, err error) {
	res, err := w.request(ctx, "GET", w.ledger+"/merchants/mer_1/balance", "", "", w.auth(w.ledger))
	if err != nil {
		return 0, 0, err
	}
	if res.code == http.StatusNotFound {
		return 0, 0, nil
	}
	if res.code != http.StatusOK {
		return 0, 0, fmt.Errorf("ledger balance of mer_1: %s: %s", res.status, res.body)
	}
	var b struct {
		Balances []struct {
			Currency  string `json:"currency"`
			Available int64  `json:"available"`
			Pending   int64  `json:"pending"`
		} `json:"balances"`
	}
	if err := json.Unmarshal(res.body, &b); err != nil {
		return 0, 0, fmt.Errorf("ledger balance of mer_1: %w", err)
	}
	for _, c := range b.Balances {
		if c.Currency == "BRL" {
			return c.Available, c.Pending, nil
		}
	}
	return 0, 0, nil
}

// waitMerchant polls until mer_1's balances are available and pending,
// then prints the request and the answer.
func (w *walk) waitMerchant(ctx context.Context, available, pending int64) error {
	deadline := time.Now().Add(w.wait)
	for {
		a, p, err := w.merchantBalance(ctx)
		if err != nil {
			return err
		}
		if a == available && p == pending {
			_, err := w.curl(ctx, "GET", w.ledger, "/merchants/mer_1/balance", "", "", http.StatusOK)
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mer_1's balance is %d available, %d pending after %s, want %d and %d: is the relay publishing and the ledger consuming?", a, p, w.wait, available, pending)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// outboxMetrics waits for the outbox gauges to show an empty outbox and prints them.
func (w *walk) outboxMetrics(ctx context.Context) error {
	want := []string{"outbox_oldest_pending_age_seconds", "outbox_pending_rows", "outbox_dead_rows"}
	deadline := time.Now().Add(w.wait)
	for {
		res, err := w.request(ctx, "GET", w.paymentsOps+"/metrics", "", "", "")
		if err != nil {
			return err
		}
		var lines []string
		empty := true
		for _, l := range strings.Split(string(res.body), "\n") {
			for _, name := range want {
				if strings.HasPrefix(l, name+" ") {
					lines = append(lines, l)
					empty = empty && strings.HasSuffix(l, " 0")
				}
			}
		}
		if len(lines) == len(want) && empty {
			w.printf("```console\n$ curl -s %s/metrics | grep -E '^outbox_(oldest_pending_age_seconds|pending_rows|dead_rows) '\n%s\n```\n", w.paymentsOps, strings.Join(lines, "\n"))
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the outbox did not drain: " + strings.Join(lines, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (w *walk) say(s string) { w.printf("%s\n\n", s) }

func (w *walk) printf(format string, args ...any) { fmt.Fprintf(w.out, format, args...) }
