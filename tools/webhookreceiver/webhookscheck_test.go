package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// checkedDelivery is one line of the file scripts/webhooks-check.sh reads:
// a delivery as its receiver saw it, and the secret to verify it with.
type checkedDelivery struct {
	Secret  string            `json:"secret"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// signed is a delivery of body signed by the Go reference library with each
// of secrets, the first being the one the receiver holds.
func signed(t *testing.T, id, body string, at time.Time, secrets ...string) checkedDelivery {
	t.Helper()
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
	return checkedDelivery{Secret: secrets[0], Body: body, Headers: map[string]string{
		"webhook-id": id, "webhook-timestamp": strconv.FormatInt(at.Unix(), 10), "webhook-signature": strings.Join(sigs, " "),
	}}
}

// runWebhooksCheck writes deliveries as JSON lines and runs the script on
// them; it skips without npm, and fails instead under CI.
func runWebhooksCheck(t *testing.T, deliveries []checkedDelivery) (string, bool) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI is set but %s is not installed: scripts/webhooks-check.sh cannot run", tool)
			}
			t.Skipf("%s is not installed: scripts/webhooks-check.sh (the npm standardwebhooks package) is not tested here", tool)
		}
	}
	var lines []string
	for _, d := range deliveries {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	file := filepath.Join(t.TempDir(), "deliveries.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "../../scripts/webhooks-check.sh", file).CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("webhooks-check.sh: %v", err)
	}
	return string(out), err == nil
}

// The npm standardwebhooks package accepts what the Go reference library
// signs, and scripts/webhooks-check.sh fails on a delivery that does not
// verify, naming its line and nothing else. The webhooks service's own
// signer is held to the same script with the deliveries it makes.
func TestWebhooksCheckAgreesWithTheGoLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: installs the npm package")
	}
	t.Parallel()
	secret, rotatedOut, stranger := newSecret(t), newSecret(t), newSecret(t)
	now := time.Now()
	good := []checkedDelivery{
		signed(t, "0191b5a4-0000-7000-8000-000000000001", event, now, secret),
		// While a secret rotates: two v1 signatures, space-separated.
		signed(t, "0191b5a4-0000-7000-8000-000000000002", event, now, secret, rotatedOut),
		signed(t, "0191b5a4-0000-7000-8000-000000000003", event, now, rotatedOut, secret),
		// Recorded three days ago: checked as of its own timestamp.
		signed(t, "0191b5a4-0000-7000-8000-000000000004", `{"type":"payment.created","data":{"description":"café ☕"}}`, now.Add(-72*time.Hour), secret),
	}
	out, ok := runWebhooksCheck(t, good)
	if !ok || !strings.Contains(out, "4 of 4 deliveries verified") {
		t.Fatalf("every delivery is signed by the Go library, yet the check failed (ok %v):\n%s", ok, out)
	}

	tampered := signed(t, "0191b5a4-0000-7000-8000-00000000000a", event, now, secret)
	tampered.Body = strings.Replace(tampered.Body, "pay_1", "pay_2", 1)
	wrongSecret := signed(t, "0191b5a4-0000-7000-8000-00000000000b", event, now, stranger)
	wrongSecret.Secret = secret
	out, ok = runWebhooksCheck(t, append(append([]checkedDelivery{}, good[:2]...), tampered, good[2], wrongSecret, good[3]))
	if ok {
		t.Fatalf("a tampered body and a stranger's signature passed:\n%s", out)
	}
	if !strings.Contains(out, "4 of 6 deliveries verified") {
		t.Errorf("want 4 of 6 verified:\n%s", out)
	}
	for _, bad := range []string{":3: webhook-id 0191b5a4-0000-7000-8000-00000000000a", ":5: webhook-id 0191b5a4-0000-7000-8000-00000000000b"} {
		if !strings.Contains(out, bad) {
			t.Errorf("the failure of line %s is not reported:\n%s", bad, out)
		}
	}
	if n := strings.Count(out, "webhook-id "); n != 2 {
		t.Errorf("%d failures reported, want the 2 bad lines:\n%s", n, out)
	}
	for _, s := range []string{secret, rotatedOut, stranger} {
		if strings.Contains(out, strings.TrimPrefix(s, "whsec_")) {
			t.Errorf("the check printed a secret:\n%s", out)
		}
	}
}
