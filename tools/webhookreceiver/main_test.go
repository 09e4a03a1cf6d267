package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/internal/logtest"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// newSecret returns a whsec_ secret like the ones POST /webhook_endpoints
// answers: 32 random bytes, base64.
func newSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

const event = `{"specversion":"1.0","id":"0191b5a4-0000-7000-8000-000000000001","type":"payment.captured","source":"payments","data":{"payment_id":"pay_1"}}`

// delivery is a POST /webhooks signed by the reference library with each of
// secrets (space-separated, as while a secret rotates), at at.
func delivery(t *testing.T, body string, at time.Time, secrets ...string) *http.Request {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/webhooks", strings.NewReader(body))
	id := "0191b5a4-0000-7000-8000-000000000001"
	var sigs []string
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := wh.Sign(id, at, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		sigs = append(sigs, sig)
	}
	r.Header.Set("webhook-id", id)
	r.Header.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
	r.Header.Set("webhook-signature", strings.Join(sigs, " "))
	r.Header.Set("Content-Type", "application/json")
	return r
}

// logLines decodes the receiver's JSON log lines.
func logLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	return lines
}

func TestReceiverVerifiesEachDelivery(t *testing.T) {
	t.Parallel()
	good, other := newSecret(t), newSecret(t)
	now := time.Now()
	for _, tc := range []struct {
		name     string
		env      string
		file     string // the secrets file's content; "" = no file
		req      func() *http.Request
		want     int
		verified bool
	}{
		{"signed with the env secret", good, "", func() *http.Request { return delivery(t, event, now, good) }, 204, true},
		{"signed with another secret", good, "", func() *http.Request { return delivery(t, event, now, other) }, 400, false},
		{"two signatures while rotating, one ours", good, "", func() *http.Request { return delivery(t, event, now, other, good) }, 204, true},
		{"body changed after signing", good, "", func() *http.Request {
			r := delivery(t, event, now, good)
			r.Body = io.NopCloser(strings.NewReader(strings.Replace(event, "pay_1", "pay_2", 1)))
			return r
		}, 400, false},
		{"timestamp older than the tolerance", good, "", func() *http.Request { return delivery(t, event, now.Add(-10*time.Minute), good) }, 400, false},
		{"no signature header", good, "", func() *http.Request {
			r := delivery(t, event, now, good)
			r.Header.Del("webhook-signature")
			return r
		}, 400, false},
		{"no secret configured", "", "", func() *http.Request { return delivery(t, event, now, good) }, 400, false},
		{"secret from the file", "", "# the demo's\n\n" + other + "\n" + good + "\n", func() *http.Request { return delivery(t, event, now, good) }, 204, true},
		{"unusable line in the file, a good one after", "", "not-a-secret\n" + good + "\n", func() *http.Request { return delivery(t, event, now, good) }, 204, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "secret")
			if tc.file != "" {
				if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s, err := newSecrets(tc.env, file)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			h := newHandler(s, slog.New(slog.NewJSONHandler(&out, nil)))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, tc.req())
			if rec.Code != tc.want {
				t.Errorf("status %d, want %d; body %s", rec.Code, tc.want, rec.Body)
			}
			var webhook map[string]any
			for _, l := range logLines(t, out.String()) {
				if l["msg"] == "webhook" {
					if webhook != nil {
						t.Errorf("two webhook lines for one delivery:\n%s", out.String())
					}
					webhook = l
				}
			}
			if webhook == nil {
				t.Fatalf("no webhook log line:\n%s", out.String())
			}
			if webhook["verified"] != tc.verified || webhook["webhook-id"] != "0191b5a4-0000-7000-8000-000000000001" || webhook["type"] != "payment.captured" {
				t.Errorf("logged %v, want webhook-id, type payment.captured and verified %v", webhook, tc.verified)
			}
			for _, secret := range []string{good, other} {
				key := strings.TrimPrefix(secret, "whsec_")
				if strings.Contains(out.String(), key) || strings.Contains(rec.Body.String(), key) {
					t.Errorf("a secret is in the log or the answer:\n%s\n%s", out.String(), rec.Body)
				}
			}
		})
	}
}

// A delivery that no secret verifies is answered, and logged, with what
// keeps the receiver from having a secret: the reader is sent to the fix,
// not told "no secret" when the file is there but unreadable.
func TestReceiverSaysWhyItHasNoSecret(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	denied := func(name string) ([]byte, error) {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrPermission}
	}
	for _, tc := range []struct {
		name     string
		noFile   bool   // WEBHOOKS_RECEIVER_SECRETS_FILE unset
		content  string // "" = the file does not exist
		readFile func(string) ([]byte, error)
		want     string
	}{
		{name: "nothing configured", noFile: true, want: "no secret configured: set WEBHOOKS_RECEIVER_SECRET or WEBHOOKS_RECEIVER_SECRETS_FILE"},
		{name: "the file does not exist", want: "secret does not exist: write the whsec_"},
		{name: "the file is empty", content: "\n# nothing yet\n", want: "secret is empty: write the whsec_"},
		{name: "the file may not be read", content: secret, readFile: denied, want: "secret: permission denied: the receiver runs as uid"},
		{name: "the file holds no secret", content: "sk_live_oops\n", want: "secret:1: want a whsec_… secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "secret")
			if tc.content != "" {
				if err := os.WriteFile(file, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.noFile {
				file = ""
			}
			s, err := newSecrets("", file)
			if err != nil {
				t.Fatal(err)
			}
			if tc.readFile != nil {
				s.readFile = tc.readFile
			}
			var out bytes.Buffer
			rec := httptest.NewRecorder()
			newHandler(s, slog.New(slog.NewJSONHandler(&out, nil))).ServeHTTP(rec, delivery(t, event, time.Now(), secret))
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tc.want) {
				t.Errorf("answered %d %s, want 400 saying %q", rec.Code, rec.Body, tc.want)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("the log does not say %q:\n%s", tc.want, out.String())
			}
			if strings.Contains(out.String(), "no usable secret: \"") || strings.Contains(rec.Body.String(), "verify: no usable secret: \"") {
				t.Errorf("an empty reason:\n%s", out.String())
			}
		})
	}
}

// A secret in the environment needs no file: a missing file beside it is
// where the next secret will arrive, not a problem to report.
func TestReceiverWithAnEnvSecretNeedsNoFile(t *testing.T) {
	t.Parallel()
	s, err := newSecrets(newSecret(t), filepath.Join(t.TempDir(), "secret"))
	if err != nil {
		t.Fatal(err)
	}
	if list, problems := s.current(); len(list) != 1 || len(problems) != 0 {
		t.Errorf("got %d secrets and problems %q, want the env's secret and none", len(list), problems)
	}
}

// The file is read on every request: a secret written after start verifies
// the next delivery, no restart.
func TestReceiverRereadsTheSecretsFile(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	file := filepath.Join(t.TempDir(), "secret")
	s, err := newSecrets("", file)
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(s, logtest.Discard())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, delivery(t, event, time.Now(), secret))
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("before the file: status %d, want 400", rec.Code)
	}
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, delivery(t, event, time.Now(), secret))
	if rec.Code != http.StatusNoContent {
		t.Errorf("after the file was written: status %d, want 204", rec.Code)
	}
}

func TestReceiverRefusesABadEnvSecret(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"sk_not_whsec", "whsec_!!!not base64!!!"} {
		err := run(context.Background(), []string{"-addr", "127.0.0.1:0"}, func(k string) string {
			if k == "WEBHOOKS_RECEIVER_SECRET" {
				return bad
			}
			return ""
		}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "WEBHOOKS_RECEIVER_SECRET") || strings.Contains(err.Error(), bad) {
			t.Errorf("secret %q: got %v, want an error naming the variable, not the value", bad, err)
		}
	}
}

// syncBuffer is a bytes.Buffer run writes to while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// run serves on -addr, its healthcheck passes, and cancelling its context
// (SIGTERM, in main) stops it cleanly.
func TestRunServesAndStops(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, func(k string) string {
			if k == "WEBHOOKS_RECEIVER_SECRET" {
				return secret
			}
			return ""
		}, &out)
	}()
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(deadline); {
		for _, l := range logLines(t, out.String()) {
			if a, ok := l["addr"].(string); ok {
				addr = a
			}
		}
		if addr == "" {
			time.Sleep(10 * time.Millisecond) // polling for the listener, with a deadline
		}
	}
	if addr == "" {
		t.Fatalf("run logged no address:\n%s", out.String())
	}
	if err := run(ctx, []string{"-healthcheck", "-addr", addr}, func(string) string { return "" }, io.Discard); err != nil {
		t.Errorf("healthcheck: %v", err)
	}
	req := delivery(t, event, time.Now(), secret)
	req.RequestURI, req.URL.Scheme, req.URL.Host = "", "http", addr
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Errorf("status %d, want 204", res.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run after cancel: %v", err)
	}
	if !strings.Contains(out.String(), "webhook receiver stopped") {
		t.Errorf("no stop line:\n%s", out.String())
	}
}
