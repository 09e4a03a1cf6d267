package rolling

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/provenance"
	"github.com/payments-outbox/payments-outbox/tools/internal/proc"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	awstest.Terminate()
	os.Exit(code)
}

// root is the repository's root, from this package's directory.
const root = "../.."

// apiKey is a fixed test key for merchant mer_1 (`payments apikey create
// --key`), valid in both releases.
const apiKey = "pk_test_rollingrollingro_atestkeyoftherollingupdatetestneveruseditforrealxxxx"

const ledgerToken = "rolling-update-test-operator-token-not-a-secret"

// release is one build of the payments and the ledger services.
type release struct {
	name             string
	payments, ledger string // binaries
	signs            bool   // its payments service signs the events it publishes
}

// TestPreviousReleaseRunsOnTheNewSchema is a rolling update, step by step:
//
//  1. the previous release migrates an empty database and serves;
//  2. this checkout's migrations run while it serves (the Job before the
//     Deployment rolls) — and the old binaries go on creating, refunding and
//     posting on the new schema;
//  3. the new binaries start beside the old ones, on the same databases and
//     queue, and each release reads what the other wrote;
//  4. each order the Deployments may roll in, alone: the new payments with
//     the old ledger (the old consumer takes the events the new producer
//     signed), then the old payments with the new ledger (the new consumer
//     verifies the old producer's events, or accepts them unsigned while
//     told to, when that release predates signing);
//  5. the old ones gone and the transition over — the new ledger refuses
//     unsigned events — the new ones carry on, an event nobody signed is
//     refused to the DLQ unposted, and `ledger reconcile` finds the ledger
//     equal to the payments.
//
// Signing is on throughout, as docs/SECURITY.md's "Turning signatures on"
// rolls it out: the new payments signs with its key, and the new ledger
// holds the public half and, until step 5, accepts unsigned events (the
// previous release may not sign). The old binaries are given the same
// variables, and read what they know of them.
func TestPreviousReleaseRunsOnTheNewSchema(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two releases and runs them against Postgres and SNS/SQS")
	}
	commit := previousRelease(t) // first: with nothing to roll from, nothing else matters
	// Everything else the test needs that may be missing (the servers) is
	// looked for before the minutes it spends building two releases, so
	// that a skip costs nothing.
	// A standard queue delivers in no order: a refund that arrives before
	// its payment is released and comes back after the visibility
	// timeout, which a short one keeps short.
	fixture := awstest.NewTopicQueue(t, awstest.QueueConfig{VisibilityTimeout: 2 * time.Second})
	paymentsDB, ledgerDB := pgtest.NewDatabase(t), pgtest.NewDatabase(t)

	ctx := t.Context()
	dir := t.TempDir()
	oldRel := buildPrevious(t, dir, commit)
	newRel := release{name: "new", signs: true}
	var err error
	if newRel.payments, err = proc.Build(ctx, dir, "payments"); err != nil {
		t.Fatal(err)
	}
	if newRel.ledger, err = proc.Build(ctx, dir, "ledger"); err != nil {
		t.Fatal(err)
	}
	signer, err := provenance.GenerateSigner("rolling")
	if err != nil {
		t.Fatal(err)
	}
	common := map[string]string{
		"AWS_ENDPOINT_URL": awstest.Endpoint(t), "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"MIGRATE_ON_START": "false", "LOG_LEVEL": "warn",
	}
	paymentsEnv := with(common, map[string]string{"DATABASE_URL": paymentsDB, "PAYMENTS_TOPIC_ARN": fixture.TopicARN,
		"PAYMENTS_SIGNING_KEY_ID": signer.KeyID(), "PAYMENTS_SIGNING_KEY": signer.Seed()})
	ledgerEnv := with(common, map[string]string{
		"DATABASE_URL": ledgerDB, "LEDGER_QUEUE_URL": fixture.QueueURL, "LEDGER_DLQ_URL": fixture.DLQURL,
		"LEDGER_API_TOKENS": ledgerToken, "LEDGER_WAIT_TIME": "1s", "PAYMENTS_DATABASE_URL": paymentsDB,
		"PAYMENTS_PUBLIC_KEYS": signer.PublicKey().String(),
	})
	// The transition: signed events verified, unsigned ones applied.
	transitionEnv := with(ledgerEnv, map[string]string{"PAYMENTS_UNSIGNED_EVENTS": "accept"})

	// 1. The previous release, alone.
	run(t, oldRel.payments, paymentsEnv, "migrate")
	run(t, oldRel.ledger, ledgerEnv, "migrate")
	run(t, oldRel.payments, paymentsEnv, "apikey", "create", "--merchant", "mer_1", "--name", "rolling", "--key", apiKey)
	oldPay := start(t, dir, "payments-old", oldRel.payments, paymentsEnv)
	oldLed := start(t, dir, "ledger-old", oldRel.ledger, ledgerEnv)
	first := payAndRefund(t, oldPay)
	waitPosted(t, oldLed, first)

	// 2. The new schema under the running old release.
	run(t, newRel.payments, paymentsEnv, "migrate")
	run(t, newRel.ledger, ledgerEnv, "migrate")
	second := payAndRefund(t, oldPay)
	waitPosted(t, oldLed, second)

	// 3. Both releases at once, as while the Deployments roll.
	newPay := start(t, dir, "payments-new", newRel.payments, paymentsEnv)
	newLed := start(t, dir, "ledger-new", newRel.ledger, transitionEnv)
	third := payAndRefund(t, newPay)
	fourth := payAndRefund(t, oldPay)
	for _, id := range []string{first, second, third, fourth} {
		for _, p := range []*proc.Process{oldPay, newPay} {
			getPayment(t, p, id) // each release reads the other's payments
		}
		for _, l := range []*proc.Process{oldLed, newLed} {
			waitPosted(t, l, id) // and the other's postings
		}
	}

	// 4a. Payments rolled first: its new release alone publishes, signed,
	// and the old ledger alone consumes.
	stop(t, oldPay, newLed)
	fifth := payAndRefund(t, newPay)
	waitPosted(t, oldLed, fifth)

	// 4b. The ledger rolled first: the old payments alone publishes and
	// the new ledger alone consumes — signed events it verifies, or, from a
	// release that predates signing, unsigned ones it accepts while
	// PAYMENTS_UNSIGNED_EVENTS=accept says to.
	stop(t, newPay, oldLed)
	oldPay = start(t, dir, "payments-old-again", oldRel.payments, paymentsEnv)
	newLed = start(t, dir, "ledger-new-accepting", newRel.ledger, transitionEnv)
	sixth := payAndRefund(t, oldPay)
	waitPosted(t, newLed, sixth)
	switch n := metric(t, newLed, "ledger_messages_unsigned_accepted_total"); {
	case !oldRel.signs && n < 2:
		t.Errorf("the new ledger counted %v unsigned events accepted, want at least the sixth payment's and its refund's: %s does not sign", n, oldRel.name)
	case oldRel.signs && n != 0:
		t.Errorf("the new ledger counted %v unsigned events accepted, want none: %s signs every event", n, oldRel.name)
	}

	// 5. The old release gone, and the transition over: unsigned events
	// refused (PAYMENTS_UNSIGNED_EVENTS unset).
	stop(t, oldPay, newLed)
	newPay = start(t, dir, "payments-new-again", newRel.payments, paymentsEnv)
	newLed = start(t, dir, "ledger-new-refusing", newRel.ledger, ledgerEnv)
	seventh := payAndRefund(t, newPay)
	waitPosted(t, newLed, seventh)
	forged := sendForgery(t, fixture)
	dlq := fixture.Drain(t, fixture.DLQURL, 1, time.Minute)
	if len(dlq) != 1 || !strings.HasPrefix(aws.ToString(dlq[0].MessageAttributes["rejected"].StringValue), "missing_signature") {
		t.Errorf("the DLQ holds %d messages (%v), want the unsigned forgery, refused as missing_signature", len(dlq), dlq)
	}
	if status, body := entries(ctx, newLed, forged); status != http.StatusNotFound {
		t.Errorf("the forged payment %s: entries %d %s, want 404: never posted", forged, status, body)
	}
	run(t, newRel.ledger, ledgerEnv, "reconcile", "--grace", "0s")
}

// stop stops each process, requiring a clean exit.
func stop(t *testing.T, ps ...*proc.Process) {
	t.Helper()
	for _, p := range ps {
		if err := p.Stop(); err != nil {
			t.Fatalf("%s: %v", p.Name(), err)
		}
	}
}

// sendForgery puts on the ledger's queue, straight and unsigned, a valid
// payment.created of a payment the payments service never made, and
// returns that payment's id.
func sendForgery(t *testing.T, fixture *awstest.TopicQueue) string {
	t.Helper()
	paymentID := uuid.NewString()
	body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":%q,"amount":9999999900,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1"}}`,
		uuid.NewString(), paymentID, time.Now().UTC().Format(time.RFC3339Nano), paymentID)
	if _, err := fixture.SQS.SendMessage(t.Context(), &awssqs.SendMessageInput{QueueUrl: aws.String(fixture.QueueURL), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	return paymentID
}

// metric is the value of a counter or gauge without labels that p serves on
// its ops listener, or -1.
func metric(t *testing.T, p *proc.Process, name string) float64 {
	t.Helper()
	res, err := client.Get("http://" + p.OpsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f
			}
		}
	}
	return -1
}

// noPreviousRelease starts the reason the test skips with when
// deploy/PREVIOUS_RELEASE is none: a project before the first release of its
// schema has no release to roll from, and a fork of this repository is one
// until it ships (scripts/fork.sh writes none). tools/testrun lets CI pass this skip, and no
// other (its expectedSkips quotes this text).
const noPreviousRelease = "no previous release to roll from: deploy/PREVIOUS_RELEASE is none"

// previousRelease is the commit deploy/PREVIOUS_RELEASE names, its one line
// that is not a comment: a release of this module, in this clone's history.
// When that line is none, the test skips (noPreviousRelease). Without the
// commit (a shallow clone) the test skips, and fails under CI. A commit of
// another module fails it: that release predates a fork of this repository,
// whose events name other schemas, and is not its previous release.
func previousRelease(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy/PREVIOUS_RELEASE"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.Lines(string(b)) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 1 && lines[0] == "none" {
		t.Skip(noPreviousRelease + ": no release of this schema has shipped yet, so there is nothing to roll from " +
			"(a release whose migrations are not this checkout's baseline and its successors cannot upgrade to it); " +
			"when the first release ships, write its commit there (docs/FORKING.md)")
	}
	if len(lines) != 1 || len(lines[0]) != 40 {
		t.Fatalf("deploy/PREVIOUS_RELEASE holds %q besides its comments, want one line: the previous release's full commit hash, or none", lines)
	}
	commit := lines[0]
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("the previous release %s is not in this clone (%v: %s); fetch the history", commit, err, out)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	gomod, err := exec.Command("git", "-C", root, "show", commit+":go.mod").Output()
	if err != nil {
		t.Fatalf("git show %s:go.mod: %v", commit, err)
	}
	previous := filepath.Join(t.TempDir(), "go.mod")
	if err := os.WriteFile(previous, gomod, 0o644); err != nil {
		t.Fatal(err)
	}
	was, is := modulePath(t, previous), modulePath(t, filepath.Join(root, "go.mod"))
	if unversioned(was) != unversioned(is) {
		t.Fatalf("deploy/PREVIOUS_RELEASE names %s, a release of %s, not of this module, %s: "+
			"it predates the fork, and publishes events whose schemas this release does not know. "+
			"Write none there until this project's first release ships, then that release's commit (docs/FORKING.md)",
			commit[:12], was, is)
	}
	return commit
}

// modulePath is the module path the go.mod file at path declares, read by
// go mod edit (the go command's own parser).
func modulePath(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "edit", "-json", path).Output()
	if err != nil {
		t.Fatalf("go mod edit -json %s: %v", path, err)
	}
	var f struct{ Module struct{ Path string } }
	if err := json.Unmarshal(out, &f); err != nil || f.Module.Path == "" {
		t.Fatalf("go mod edit -json %s: no module path in %s (%v)", path, out, err)
	}
	return f.Module.Path
}

// unversioned is module path p without its major version suffix (/v2): a
// new major version of a module is the same project, and rolls from its
// previous release.
func unversioned(p string) string {
	if i := strings.LastIndex(p, "/v"); i > 0 {
		if _, err := strconv.Atoi(p[i+2:]); err == nil {
			return p[:i]
		}
	}
	return p
}

// buildPrevious builds the release of commit from this repository's
// history, its tree exported with git archive (no worktree to clean up), each
// command in that tree's own module.
func buildPrevious(t *testing.T, dir, commit string) release {
	t.Helper()
	src := filepath.Join(dir, "previous")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, out)
	}
	rel := release{name: "previous " + commit[:7]}
	// A release that signs reads its key from PAYMENTS_SIGNING_KEY.
	config, err := os.ReadFile(filepath.Join(src, "cmd/payments/config.go"))
	if err != nil {
		t.Fatalf("%s: %v", rel.name, err)
	}
	rel.signs = strings.Contains(string(config), `"PAYMENTS_SIGNING_KEY"`)
	for _, name := range []string{"payments", "ledger"} {
		bin := filepath.Join(dir, name+"-previous")
		cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", bin, "./cmd/"+name)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s of %s: %v\n%s", name, rel.name, err, out)
		}
		if name == "payments" {
			rel.payments = bin
		} else {
			rel.ledger = bin
		}
	}
	return rel
}

func with(base, more map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range []map[string]string{base, more} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func environ(env map[string]string) []string {
	vars := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	return vars
}

// run runs a one-shot command of a binary and requires it to succeed.
func run(t *testing.T, bin string, env map[string]string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = environ(env)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
}

// start runs a binary's server until the end of the test (or an earlier
// Stop), requiring a clean exit on SIGTERM.
func start(t *testing.T, dir, name, bin string, env map[string]string) *proc.Process {
	t.Helper()
	p, err := proc.New(name, bin, filepath.Join(dir, name+".log"), environ(env))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(t.Context()); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, p.Tail(30))
	}
	t.Cleanup(func() {
		if p.Alive() {
			if err := p.Stop(); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		if t.Failed() {
			t.Logf("%s log (last lines):\n%s", name, p.Tail(40))
		}
	})
	return p
}

var client = &http.Client{Timeout: 10 * time.Second}

func call(t *testing.T, method, u, auth, body string, want int) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+auth)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, u, resp.StatusCode, b, want)
	}
	return b
}

// payAndRefund creates a payment through p and refunds part of it, and
// returns the payment's id.
func payAndRefund(t *testing.T, p *proc.Process) string {
	t.Helper()
	base := "http://" + p.Addr()
	b := call(t, "POST", base+"/payments", apiKey, `{"amount": 1050, "currency": "BRL", "payer_id": "cus_1", "description": "rolling"}`, http.StatusCreated)
	var created struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &created); err != nil || created.ID == "" {
		t.Fatalf("%s: POST /payments answered %s (%v)", p.Name(), b, err)
	}
	call(t, "POST", base+"/payments/"+url.PathEscape(created.ID)+"/refunds", apiKey, `{"amount": 300}`, http.StatusCreated)
	return created.ID
}

func getPayment(t *testing.T, p *proc.Process, id string) {
	t.Helper()
	call(t, "GET", "http://"+p.Addr()+"/payments/"+url.PathEscape(id), apiKey, "", http.StatusOK)
}

// waitPosted polls ledger l until it shows payment id's payment and its
// refund posted.
func waitPosted(t *testing.T, l *proc.Process, id string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		_, b := entries(t.Context(), l, id)
		var got struct {
			Transactions []struct {
				Kind string `json:"kind"`
			} `json:"transactions"`
		}
		if json.Unmarshal(b, &got) == nil {
			var kinds []string
			for _, tx := range got.Transactions {
				kinds = append(kinds, tx.Kind)
			}
			if slices.Contains(kinds, "payment") && slices.Contains(kinds, "refund") {
				return
			}
		}
		last = string(b)
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("%s: payment %s and its refund not posted within 60s; last answer %s", l.Name(), id, last)
}

func entries(ctx context.Context, l *proc.Process, id string) (int, []byte) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+l.Addr()+"/payments/"+url.PathEscape(id)+"/entries", nil)
	if err != nil {
		return 0, nil
	}
	req.Header.Set("Authorization", "Bearer "+ledgerToken)
	resp, err := client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
