package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
	"github.com/payments-outbox/payments-outbox/application/webhooks/webhookstest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// TestSignMatchesTheSpecificationsExample: the example of the Standard
// Webhooks specification, signed alike.
func TestSignMatchesTheSpecificationsExample(t *testing.T) {
	t.Parallel()
	secret, err := webhooks.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := webhooks.Sign([][]byte{secret}, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	two := webhooks.Sign([][]byte{secret, []byte("another secret of 24 bytes")}, "id", time.Unix(1, 0), nil)
	if parts := strings.Split(two, " "); len(parts) != 2 || !strings.HasPrefix(parts[1], "v1,") {
		t.Errorf("two secrets: %q, want two space-separated v1 signatures", two)
	}
	if s := webhooks.FormatSecret(webhooks.NewSecret()); !strings.HasPrefix(string(s), "whsec_") {
		t.Errorf("new secret %q", s)
	} else if b, err := webhooks.ParseSecret(s); err != nil || len(b) != 32 {
		t.Errorf("new secret: %d bytes, %v", len(b), err)
	}
}

func TestScheduleJittersWithinTwentyPercent(t *testing.T) {
	t.Parallel()
	s, err := webhooks.ParseSchedule(webhooks.DefaultRetrySchedule)
	if err != nil {
		t.Fatal(err)
	}
	if s.Attempts() != 10 {
		t.Errorf("attempts: %d, want 10", s.Attempts())
	}
	for n, step := range s.Delays() {
		for range 100 {
			d, ok := s.Next(n + 1)
			if !ok || d < step*8/10 || d > step*12/10 {
				t.Fatalf("after attempt %d: %s, want within 20%% of %s", n+1, d, step)
			}
		}
	}
	if _, ok := s.Next(10); ok {
		t.Error("after the tenth attempt: want none more")
	}
	for _, bad := range []string{"", "5s,,1m", "5s,-1m", "soon"} {
		if _, err := webhooks.ParseSchedule(bad); err == nil {
			t.Errorf("ParseSchedule(%q): want an error", bad)
		}
	}
}

func TestSealerBindsTheSecretToItsEndpoint(t *testing.T) {
	t.Parallel()
	s, err := webhooks.NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	sealed := s.Seal("we_a", []byte("secret"))
	if strings.Contains(string(sealed), "secret") {
		t.Error("the sealed form shows the secret")
	}
	if got, err := s.Open("we_a", sealed); err != nil || string(got) != "secret" {
		t.Errorf("open: %q, %v", got, err)
	}
	if _, err := s.Open("we_b", sealed); !errors.Is(err, webhooks.ErrSealed) {
		t.Errorf("open for another endpoint: %v, want ErrSealed", err)
	}
	other, _ := webhooks.NewSealer([]byte("fedcba9876543210fedcba9876543210"))
	if _, err := other.Open("we_a", sealed); !errors.Is(err, webhooks.ErrSealed) {
		t.Errorf("open with another key: %v, want ErrSealed", err)
	}
	if _, err := webhooks.NewSealer([]byte("short")); err == nil {
		t.Error("a short key: want an error")
	}
}

// TestRegistryCoversEveryPublishedType: every event type published under
// api/events is one an endpoint can subscribe to, at every version.
func TestRegistryCoversEveryPublishedType(t *testing.T) {
	t.Parallel()
	dirs, err := os.ReadDir("../../api/events")
	if err != nil {
		t.Fatal(err)
	}
	types := webhooks.Handler{}.Types()
	n := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "envelope" {
			continue
		}
		n++
		files, _ := os.ReadDir("../../api/events/" + d.Name())
		for _, f := range files {
			v := strings.TrimSuffix(strings.TrimPrefix(f.Name(), "v"), ".json")
			if !slices.Contains(types[d.Name()], v) {
				t.Errorf("api/events/%s/%s is published, and application/webhooks/handler.go's registry does not deliver it: add it to eventTypes", d.Name(), f.Name())
			}
		}
	}
	if n < 5 {
		t.Fatalf("found %d published types; the test is not looking where it should", n)
	}
}

// TestCheckURL: a URL is read as the dialler will read it before it is
// checked: what is not a plain public name or address is refused, and
// what is accepted is stored normalised.
func TestCheckURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://example.com/hooks":              "https://example.com/hooks",
		"https://93.184.215.14:8443/x?y=1":       "https://93.184.215.14:8443/x?y=1",
		"HTTPS://Shop.Example.COM/Hooks":         "https://shop.example.com/Hooks",
		"https://example.com./hooks":             "https://example.com/hooks",
		"https://xn--bcher-kva.example/":         "https://xn--bcher-kva.example/",
		"https://[2606:2800:21f::8b2c]:65535/":   "https://[2606:2800:21f::8b2c]:65535/",
		"https://hooks.0x7f000001.example.com/x": "https://hooks.0x7f000001.example.com/x",
	} {
		got, err := webhooks.CheckURL(raw, false)
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, bad := range []string{
		"http://example.com/", "https://user:pw@example.com/", "/relative", "https://example.com/#frag", "ftp://example.com/",
		// Addresses that are not public, in every form.
		"https://10.0.0.1/", "https://[::1]/", "https://169.254.169.254/latest", "https://[::ffff:127.0.0.1]/",
		"https://[64:ff9b:1::a9fe:a9fe]/", "https://[fec0::1]/", "https://[::ffff:0:a9fe:a9fe]/",
		// inet_aton's forms, public or not: the C resolver reads them as addresses.
		"https://0x7f000001/", "https://2130706433/", "https://0177.0.0.1/", "https://127.1/", "https://0xa9fea9fe/",
		"https://169.254.43518/", "https://134744072/", "https://8.8.8.010/",
		// Fullwidth and circled digits become an address once the client
		// maps the name to ASCII: a name must be ASCII already.
		"https://①②⑦.⓪.⓪.①/", "https://１２７.０.０.１/", "https://bücher.example/", "https://ｅｘａｍｐｌｅ．ｃｏｍ/", "https://127.0.0.1./",
		// Zones, this host, special-use and single-label names.
		"https://[fe80::1%25eth0]/", "https://localhost/", "https://localhost./", "https://LOCALHOST/", "https://a.localhost/",
		"https://metadata.google.internal/", "https://printer.local/", "https://intranet/", "https://x.test/", "https://x.home.arpa/",
		// Not host names.
		"https://exa_mple.com/", "https://-a.example.com/", "https://a..example.com/",
		// Ports out of range, or empty.
		"https://example.com:0/", "https://example.com:99999/", "https://example.com:65536/", "https://example.com:/", "https://example.com:0443/",
	} {
		if got, err := webhooks.CheckURL(bad, false); !errors.Is(err, webhooks.ErrInvalidEndpoint) {
			t.Errorf("%s: got %q, %v; want ErrInvalidEndpoint", bad, got, err)
		}
	}
	for raw, want := range map[string]string{"http://127.0.0.1:8080/": "http://127.0.0.1:8080/", "http://receiver:8080/hook": "http://receiver:8080/hook"} {
		if got, err := webhooks.CheckURL(raw, true); err != nil || got != want {
			t.Errorf("allowed private, %s: got %q, %v; want %q", raw, got, err, want)
		}
	}
	if _, err := webhooks.CheckURL("http://127.1:8080/", true); err == nil {
		t.Error("allowed private, 127.1: accepted; even then an address must be written plainly")
	}
}

// fakeSender answers each request with the next of its answers.
type fakeSender struct {
	mu      sync.Mutex
	answers []webhooks.Response
	got     []webhooks.Request
}

func (f *fakeSender) Send(_ context.Context, r webhooks.Request) webhooks.Response {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, r)
	if len(f.answers) == 0 {
		return webhooks.Response{StatusCode: 200}
	}
	a := f.answers[0]
	f.answers = f.answers[1:]
	return a
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type fixture struct {
	store  *webhookstest.FakeStore
	svc    *webhooks.Service
	sender *fakeSender
	clock  *clock
	worker *webhooks.Worker
	proc   *inbox.Processor[webhooks.Fanout, webhooks.Event]
	recv   *inbox.Service[webhooks.Fanout, webhooks.Event]
}

type anySchema struct{}

func (anySchema) Validate(string, string, []byte) error { return nil }

func newFixture(t *testing.T, cfg webhooks.WorkerConfig, answers ...webhooks.Response) *fixture {
	t.Helper()
	sealer, _ := webhooks.NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	f := &fixture{store: webhookstest.NewFakeStore(), sender: &fakeSender{answers: answers}, clock: &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	log := logtest.Discard()
	f.svc = webhooks.NewService(f.store, sealer, f.clock.now, webhooks.Config{})
	f.worker = webhooks.NewWorker(f.store, f.sender, sealer, webhooks.NewSchedule(time.Minute, time.Hour), log, nil, f.clock.now, cfg)
	f.proc = inbox.NewProcessor(f.store, webhooks.Handler{}, anySchema{}, log, nil, f.clock.now, inbox.ProcessorConfig{})
	f.recv = inbox.NewService(f.store, f.proc, f.clock.now, inbox.Config{Mode: inbox.Async})
	return f
}

var merchantA = access.MerchantPrincipal("key_a", "mer_a")

func (f *fixture) endpoint(t *testing.T, who access.Principal, events ...string) webhooks.Created {
	t.Helper()
	c, err := f.svc.Create(context.Background(), webhooks.CreateEndpoint{Principal: who, URL: "https://example.com/" + uuid.NewString(), EnabledEvents: events})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// event receives a payment.created of merchant into the inbox and fans it
// out, as the consumer and the processor do.
func (f *fixture) event(t *testing.T, merchant string) string {
	t.Helper()
	id := uuid.NewString()
	body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","time":%q,"dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"merchant_id":%q}}`, id, f.clock.now().Format(time.RFC3339), merchant)
	if _, err := f.recv.Receive(context.Background(), []byte(body)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.proc.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	return id
}

func (f *fixture) step(t *testing.T) int {
	t.Helper()
	n, err := f.worker.Step(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestWorkerRetriesThenParks(t *testing.T) {
	t.Parallel()
	fail := webhooks.Response{StatusCode: 503, Excerpt: []byte("down for maintenance")}
	f := newFixture(t, webhooks.WorkerConfig{}, fail, fail, fail)
	e := f.endpoint(t, merchantA, webhooks.AllEvents)
	id := f.event(t, "mer_a")
	for attempt := range 3 {
		if attempt > 0 {
			f.clock.add(2 * time.Hour) // past the jittered delay, wherever it fell
		}
		if n := f.step(t); n != 1 {
			t.Fatalf("attempt %d: claimed %d", attempt+1, n)
		}
	}
	ds := f.store.Deliveries()
	if len(ds) != 1 || ds[0].Status != webhooks.DeliveryParked || ds[0].Attempts != 3 || ds[0].LastError != "answered 503: down for maintenance" {
		t.Errorf("after three failures on a two-delay schedule: %+v, want parked", ds)
	}
	for _, r := range f.sender.got {
		if r.Headers[webhooks.HeaderID] != id || !strings.HasPrefix(r.Headers[webhooks.HeaderSignature], "v1,") {
			t.Errorf("request %+v: want the event's id and a signature", r.Headers)
		}
	}
	// A redelivery makes one more attempt, delivered this time.
	if err := f.svc.Redeliver(context.Background(), webhooks.Redeliver{Principal: merchantA, EndpointID: e.Endpoint.ID, EventID: id}); err != nil {
		t.Fatal(err)
	}
	if n := f.step(t); n != 1 || f.store.Deliveries()[0].Status != webhooks.DeliveryDelivered {
		t.Errorf("redelivered: claimed %d, %+v", n, f.store.Deliveries())
	}
}

func TestWorkerDisables(t *testing.T) {
	t.Parallel()
	t.Run("on a 410", func(t *testing.T) {
		f := newFixture(t, webhooks.WorkerConfig{}, webhooks.Response{StatusCode: 410})
		e := f.endpoint(t, merchantA, webhooks.AllEvents)
		f.event(t, "mer_a")
		f.event(t, "mer_a")
		f.step(t)
		got, _ := f.svc.Get(context.Background(), merchantA, e.Endpoint.ID)
		if got.Status != webhooks.Disabled || got.DisabledReason != "endpoint answered 410 Gone" {
			t.Errorf("after a 410: %+v", got)
		}
		if n := f.step(t); n != 0 {
			t.Errorf("claimed %d of a disabled endpoint", n)
		}
		if err := f.svc.Redeliver(context.Background(), webhooks.Redeliver{Principal: merchantA, EndpointID: e.Endpoint.ID, EventID: uuid.NewString()}); !errors.Is(err, webhooks.ErrEndpointDisabled) {
			t.Errorf("redeliver to a disabled endpoint: %v", err)
		}
	})
	t.Run("after failing for DisableAfter", func(t *testing.T) {
		refused := webhooks.Response{Err: errors.New("dial tcp 203.0.113.7:443: connect: connection refused"), Failure: webhooks.FailureConnRefused}
		f := newFixture(t, webhooks.WorkerConfig{DisableAfter: time.Hour}, refused, refused)
		e := f.endpoint(t, merchantA, webhooks.AllEvents)
		f.event(t, "mer_a")
		f.step(t)
		f.clock.add(2 * time.Hour)
		f.step(t)
		got, _ := f.svc.Get(context.Background(), merchantA, e.Endpoint.ID)
		if got.Status != webhooks.Disabled || !strings.Contains(got.DisabledReason, "every attempt failed since 2026-01-01T00:00:00Z") || !strings.Contains(got.DisabledReason, "connection refused") {
			t.Errorf("after two hours of failures: %+v", got)
		}
	})
}

func TestServiceScopesEndpointsToTheirMerchant(t *testing.T) {
	t.Parallel()
	f := newFixture(t, webhooks.WorkerConfig{})
	ctx := context.Background()
	mine := f.endpoint(t, merchantA, "payment.created")
	merchantB := access.MerchantPrincipal("key_b", "mer_b")
	if _, err := f.svc.Get(ctx, merchantB, mine.Endpoint.ID); !errors.Is(err, webhooks.ErrEndpointNotFound) {
		t.Errorf("another merchant's Get: %v, want ErrEndpointNotFound", err)
	}
	if _, err := f.svc.Delete(ctx, merchantB, mine.Endpoint.ID); !errors.Is(err, webhooks.ErrEndpointNotFound) {
		t.Errorf("another merchant's Delete: %v", err)
	}
	if _, err := f.svc.RotateSecret(ctx, webhooks.RotateSecret{Principal: merchantB, EndpointID: mine.Endpoint.ID}); !errors.Is(err, webhooks.ErrEndpointNotFound) {
		t.Errorf("another merchant's RotateSecret: %v", err)
	}
	if _, err := f.svc.Create(ctx, webhooks.CreateEndpoint{Principal: merchantB, MerchantID: "mer_a", URL: "https://example.com", EnabledEvents: []string{"*"}}); !errors.Is(err, webhooks.ErrInvalidEndpoint) {
		t.Errorf("create for another merchant: %v", err)
	}
	for _, events := range [][]string{nil, {"payment.exploded"}, {"*", "payment.created"}} {
		if _, err := f.svc.Create(ctx, webhooks.CreateEndpoint{Principal: merchantA, URL: "https://example.com", EnabledEvents: events}); !errors.Is(err, webhooks.ErrInvalidEndpoint) {
			t.Errorf("events %v: %v, want ErrInvalidEndpoint", events, err)
		}
	}
	page, err := f.svc.List(ctx, webhooks.ListEndpoints{Principal: merchantB})
	if err != nil || len(page.Endpoints) != 0 {
		t.Errorf("another merchant's list: %+v, %v", page, err)
	}
	if _, err := f.svc.List(ctx, webhooks.ListEndpoints{Principal: merchantB, StartingAfter: mine.Endpoint.ID}); !errors.Is(err, webhooks.ErrUnknownCursor) {
		t.Errorf("a cursor of another merchant's endpoint: %v", err)
	}
	// The same Idempotency-Key answers the same endpoint, never its
	// secret again: not at once, not after a rotation, not after a delete.
	c := webhooks.CreateEndpoint{Principal: merchantA, URL: "https://example.com/k", EnabledEvents: []string{"*"}, IdempotencyKey: "k-1"}
	first, err := f.svc.Create(ctx, c)
	if err != nil || first.Secret == "" {
		t.Fatalf("first: %+v, %v", first, err)
	}
	again, err := f.svc.Create(ctx, c)
	if err != nil || !again.Replayed || again.Endpoint.ID != first.Endpoint.ID || again.Secret != "" {
		t.Errorf("replay: %+v, %v; want the endpoint, no secret", again, err)
	}
	rotated, err := f.svc.RotateSecret(ctx, webhooks.RotateSecret{Principal: merchantA, EndpointID: first.Endpoint.ID})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := f.svc.Create(ctx, c); err != nil || again.Secret != "" || again.Secret == rotated.Secret {
		t.Errorf("replay after a rotation: %+v, %v; want no secret", again, err)
	}
	if _, err := f.svc.Delete(ctx, merchantA, first.Endpoint.ID); err != nil {
		t.Fatal(err)
	}
	if again, err := f.svc.Create(ctx, c); err != nil || again.Secret != "" || again.Endpoint.DeletedAt.IsZero() {
		t.Errorf("replay after the delete: %+v, %v; want the deleted endpoint, no secret", again, err)
	}
	c.URL = "https://example.com/other"
	if _, err := f.svc.Create(ctx, c); !errors.Is(err, idempotency.ErrKeyReused) {
		t.Errorf("the key with another body: %v", err)
	}
	// Only the merchant's own endpoints receive its events.
	f.endpoint(t, merchantB, webhooks.AllEvents)
	f.event(t, "mer_a")
	for _, d := range f.store.Deliveries() {
		e, _ := f.store.Endpoint(ctx, d.EndpointID)
		if e.MerchantID != "mer_a" {
			t.Errorf("mer_a's event was fanned out to %s of %s", e.ID, e.MerchantID)
		}
	}
	// A deleted endpoint's pending deliveries are canceled.
	if _, err := f.svc.Delete(ctx, merchantA, mine.Endpoint.ID); err != nil {
		t.Fatal(err)
	}
	for _, d := range f.store.Deliveries() {
		if d.EndpointID == mine.Endpoint.ID && d.Status != webhooks.DeliveryCanceled {
			t.Errorf("a deleted endpoint's delivery is %s", d.Status)
		}
	}
}

// recordingSender answers every attempt with answer and notes how long
// each was given (its context's deadline).
type recordingSender struct {
	mu      sync.Mutex
	answer  func(n int) webhooks.Response
	budgets []time.Duration
}

func (r *recordingSender) Send(ctx context.Context, _ webhooks.Request) webhooks.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	dl, _ := ctx.Deadline()
	r.budgets = append(r.budgets, time.Until(dl))
	return r.answer(len(r.budgets))
}

// TestAnEndpointThatKeepsTimingOutBacksOff: each timeout in a row halves
// the next attempt's budget down to an eighth, with the whole budget again
// at the 4th, 8th… (a receiver that is slow, not gone, can answer it); one
// attempt in flight at most meanwhile; any answer ends it.
func TestAnEndpointThatKeepsTimingOutBacksOff(t *testing.T) {
	t.Parallel()
	timeout := webhooks.Response{Err: context.DeadlineExceeded, Failure: webhooks.FailureTimeout}
	rec := &recordingSender{answer: func(n int) webhooks.Response {
		if n >= 10 {
			return webhooks.Response{StatusCode: 500} // it answers at last, if not well
		}
		return timeout
	}}
	f := newFixture(t, webhooks.WorkerConfig{AttemptTimeout: 16 * time.Second})
	sealer, _ := webhooks.NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	worker := webhooks.NewWorker(f.store, rec, sealer, webhooks.NewSchedule(time.Millisecond), logtest.Discard(), nil, f.clock.now,
		webhooks.WorkerConfig{AttemptTimeout: 16 * time.Second, PerEndpoint: 4})
	e := f.endpoint(t, merchantA, webhooks.AllEvents)
	for range 12 {
		f.event(t, "mer_a")
	}
	ctx := context.Background()
	for i := range 11 {
		if i > 0 {
			// One attempt in flight at most while it times out: a claim
			// with one leased finds nothing more of it.
			if cs, _ := f.store.ClaimDeliveries(ctx, webhooks.DeliveryClaim{Limit: 10, PerEndpoint: 4, PerMerchant: 10, At: f.clock.now(), LeaseUntil: f.clock.now().Add(time.Minute)}); i < 10 && len(cs) != 1 {
				t.Fatalf("after %d timeouts: claimed %d at once, want 1", i, len(cs))
			} else {
				for _, c := range cs {
					_ = f.store.ReleaseDelivery(ctx, c.ID, c.LeaseUntil)
				}
			}
		}
		if n, err := worker.Step(ctx); n != 1 || err != nil {
			t.Fatalf("attempt %d: claimed %d, %v", i+1, n, err)
		}
		f.clock.add(time.Second)
	}
	want := []time.Duration{16, 8, 4, 2, 16, 2, 2, 2, 16, 2, 16} // seconds; the 10th answered, the 11th has the whole budget
	for i, b := range rec.budgets {
		if w := want[i] * time.Second; b > w || b < w-time.Second {
			t.Errorf("attempt %d had %s, want %s (all: %v)", i+1, b, w, rec.budgets)
		}
	}
	got, _ := f.store.Endpoint(ctx, e.Endpoint.ID)
	if got.Timeouts != 0 {
		t.Errorf("after an answer: %d timeouts in a row, want 0", got.Timeouts)
	}
	as, _ := f.svc.Attempts(ctx, webhooks.ListAttempts{Principal: merchantA, EndpointID: e.Endpoint.ID, Limit: 100})
	if a := as.Attempts[len(as.Attempts)-2]; a.Error != "timeout: no answer within 8s" {
		t.Errorf("the second attempt's error: %q, want the budget it had", a.Error)
	}
}

// TestAttemptErrorsShowOnlyTheCategory: what the merchant reads of an
// attempt that got no answer is its category; the error itself, which
// names the platform's resolver and DNS answers, is for the operator's log.
func TestAttemptErrorsShowOnlyTheCategory(t *testing.T) {
	t.Parallel()
	for failure, want := range map[webhooks.Failure]string{
		webhooks.FailureDNS:         "dns: the host name did not resolve",
		webhooks.FailureRefused:     "refused: the host resolved to an address webhooks may not reach",
		webhooks.FailureTLS:         "tls: the TLS handshake failed (certificate or protocol)",
		webhooks.FailureConnRefused: "connection refused",
		webhooks.FailureConnReset:   "connection reset or closed before an answer",
		webhooks.FailureConnection:  "connection failed before an answer",
	} {
		leak := errors.New("dial tcp: lookup hooks.example on 127.0.0.53:53: 127.0.0.2 is not a public address")
		f := newFixture(t, webhooks.WorkerConfig{}, webhooks.Response{Err: leak, Failure: failure})
		e := f.endpoint(t, merchantA, webhooks.AllEvents)
		f.event(t, "mer_a")
		f.step(t)
		as, err := f.svc.Attempts(context.Background(), webhooks.ListAttempts{Principal: merchantA, EndpointID: e.Endpoint.ID})
		if err != nil || len(as.Attempts) != 1 {
			t.Fatalf("%s: %+v, %v", failure, as, err)
		}
		if a := as.Attempts[0]; a.Error != want || strings.Contains(a.Error, "127.0.0") {
			t.Errorf("%s: the attempt shows %q, want %q", failure, a.Error, want)
		}
	}
}

// TestRefusedBeforeTheStore: what Postgres text cannot hold (NUL, invalid
// UTF-8) and what is not of an id's form is refused by the use cases as
// the error its field has, never handed to the store.
func TestRefusedBeforeTheStore(t *testing.T) {
	t.Parallel()
	f := newFixture(t, webhooks.WorkerConfig{})
	ctx := context.Background()
	e := f.endpoint(t, merchantA, webhooks.AllEvents)
	platform := access.PlatformPrincipal("key_p")
	for _, id := range []string{"we_\x00", "we_" + strings.Repeat("0", 31) + "\xff", e.Endpoint.ID + "\x00", "WE_" + e.Endpoint.ID[3:]} {
		if _, err := f.svc.Get(ctx, merchantA, id); !errors.Is(err, webhooks.ErrEndpointNotFound) {
			t.Errorf("Get %q: %v, want ErrEndpointNotFound", id, err)
		}
		if _, err := f.svc.List(ctx, webhooks.ListEndpoints{Principal: merchantA, StartingAfter: id}); !errors.Is(err, webhooks.ErrUnknownCursor) {
			t.Errorf("List after %q: %v, want ErrUnknownCursor", id, err)
		}
		if _, err := f.svc.Attempts(ctx, webhooks.ListAttempts{Principal: merchantA, EndpointID: e.Endpoint.ID, StartingAfter: "wa_\x00" + id}); !errors.Is(err, webhooks.ErrUnknownCursor) {
			t.Errorf("Attempts after %q: %v, want ErrUnknownCursor", id, err)
		}
	}
	for _, m := range []string{"mer\x00a", "mer\xffa", strings.Repeat("m", 256), "mer\na"} {
		if _, err := f.svc.Create(ctx, webhooks.CreateEndpoint{Principal: platform, MerchantID: m, URL: "https://example.com", EnabledEvents: []string{"*"}}); !errors.Is(err, webhooks.ErrInvalidEndpoint) {
			t.Errorf("Create for merchant %q: %v, want ErrInvalidEndpoint", m, err)
		}
		if _, err := f.svc.List(ctx, webhooks.ListEndpoints{Principal: platform, MerchantID: m}); !errors.Is(err, webhooks.ErrInvalidListQuery) {
			t.Errorf("List of merchant %q: %v, want ErrInvalidListQuery", m, err)
		}
	}
	for _, d := range []string{"a\x00b", "a\xffb"} {
		if _, err := f.svc.Create(ctx, webhooks.CreateEndpoint{Principal: merchantA, URL: "https://example.com", EnabledEvents: []string{"*"}, Description: d}); !errors.Is(err, webhooks.ErrInvalidEndpoint) {
			t.Errorf("Create described %q: %v, want ErrInvalidEndpoint", d, err)
		}
	}
	if _, err := f.svc.Create(ctx, webhooks.CreateEndpoint{Principal: merchantA, URL: "https://exa\x00mple.com", EnabledEvents: []string{"*"}}); !errors.Is(err, webhooks.ErrInvalidEndpoint) {
		t.Errorf("a URL with NUL: %v, want ErrInvalidEndpoint", err)
	}
}

// TestAMerchantHasAtMostMaxEndpoints: past its cap a merchant's create is
// refused; another merchant is not held back.
func TestAMerchantHasAtMostMaxEndpoints(t *testing.T) {
	t.Parallel()
	f := newFixture(t, webhooks.WorkerConfig{})
	sealer, _ := webhooks.NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	svc := webhooks.NewService(f.store, sealer, f.clock.now, webhooks.Config{MaxEndpoints: 3})
	create := func(who access.Principal) error {
		_, err := svc.Create(context.Background(), webhooks.CreateEndpoint{Principal: who, URL: "https://example.com/" + uuid.NewString(), EnabledEvents: []string{"*"}})
		return err
	}
	for range 3 {
		if err := create(merchantA); err != nil {
			t.Fatal(err)
		}
	}
	if err := create(merchantA); !errors.Is(err, webhooks.ErrTooManyEndpoints) {
		t.Errorf("a fourth endpoint under a cap of 3: %v, want ErrTooManyEndpoints", err)
	}
	if err := create(access.MerchantPrincipal("key_b", "mer_b")); err != nil {
		t.Errorf("another merchant's: %v", err)
	}
}

// TestRecoverChecksItsRequest: the use case refuses what the store must
// not be asked, and an endpoint that takes no action.
func TestRecoverChecksItsRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t, webhooks.WorkerConfig{})
	ctx := context.Background()
	e := f.endpoint(t, merchantA, webhooks.AllEvents)
	past := f.clock.now().Add(-time.Hour)
	for name, c := range map[string]struct {
		r    webhooks.Recover
		want error
	}{
		"no since":            {webhooks.Recover{}, webhooks.ErrInvalidRecover},
		"since in the future": {webhooks.Recover{Since: f.clock.now().Add(time.Minute)}, webhooks.ErrInvalidRecover},
		"limit too big":       {webhooks.Recover{Since: past, Limit: webhooks.MaxRecoverLimit + 1}, webhooks.ErrInvalidRecover},
		"cursor not an event": {webhooks.Recover{Since: past, StartingAfter: "evt\x00"}, webhooks.ErrUnknownCursor},
		"bad key":             {webhooks.Recover{Since: past, IdempotencyKey: "has space"}, idempotency.ErrInvalidKey},
	} {
		c.r.Principal, c.r.EndpointID = merchantA, e.Endpoint.ID
		if _, err := f.svc.Recover(ctx, c.r); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if _, err := f.svc.Recover(ctx, webhooks.Recover{Principal: access.MerchantPrincipal("key_b", "mer_b"), EndpointID: e.Endpoint.ID, Since: past}); !errors.Is(err, webhooks.ErrEndpointNotFound) {
		t.Errorf("another merchant's: %v", err)
	}
	if _, err := f.svc.Delete(ctx, merchantA, e.Endpoint.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Recover(ctx, webhooks.Recover{Principal: merchantA, EndpointID: e.Endpoint.ID, Since: past}); !errors.Is(err, webhooks.ErrEndpointDeleted) {
		t.Errorf("a deleted endpoint: %v", err)
	}
}

// TestAnAmountOverTheLimitIsDeliveredToNoOne: an event whose amount is
// over MaxAmount is refused before the inbox records it (it is left for
// the DLQ, the reason logged), and nothing is fanned out.
func TestAnAmountOverTheLimitIsDeliveredToNoOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t, webhooks.WorkerConfig{})
	f.endpoint(t, merchantA, webhooks.AllEvents)
	for _, data := range []string{`"amount":1000000000000`, `"amount":1,"refunded_amount":9223372036854775807`, `"amount":100,"amount_authorized":1000000000000`} {
		body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","time":"2026-01-01T00:00:00Z","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"merchant_id":"mer_a",%s}}`, uuid.NewString(), data)
		_, err := f.recv.Receive(context.Background(), []byte(body))
		if !errors.Is(err, inbox.ErrInvalidEvent) || !strings.Contains(err.Error(), webhooks.ErrAmountLimit.Error()) {
			t.Errorf("%s: got %v, want ErrInvalidEvent for the amount limit", data, err)
		}
	}
	body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","time":"2026-01-01T00:00:00Z","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"merchant_id":"mer_a","amount":999999999999}}`, uuid.NewString())
	if _, err := f.recv.Receive(context.Background(), []byte(body)); err != nil {
		t.Errorf("the limit itself: %v, want accepted", err)
	}
	if _, err := f.proc.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ds := f.store.Deliveries(); len(ds) != 1 {
		t.Errorf("%d deliveries, want the one event within the limit", len(ds))
	}
}
