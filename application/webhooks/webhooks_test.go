package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
	"github.com/payments-outbox/payments-outbox/application/webhooks/webhookstest"
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

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"https://example.com/hooks", "https://93.184.215.14:8443/x?y=1"} {
		if err := webhooks.CheckURL(ok, false); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://example.com/", "https://user:pw@example.com/", "/relative", "https://10.0.0.1/", "https://[::1]/",
		"https://169.254.169.254/latest", "https://localhost/", "https://example.com/#frag", "ftp://example.com/"} {
		if err := webhooks.CheckURL(bad, false); !errors.Is(err, webhooks.ErrInvalidEndpoint) {
			t.Errorf("%s: got %v, want ErrInvalidEndpoint", bad, err)
		}
	}
	if err := webhooks.CheckURL("http://127.0.0.1:8080/", true); err != nil {
		t.Errorf("allowed private: %v", err)
	}
	if webhooks.IsPublic(netip.MustParseAddr("::ffff:192.168.0.1")) {
		t.Error("IPv4-mapped private address: public")
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
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
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
	body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","time":%q,"dataversion":"1","data":{"merchant_id":%q}}`, id, f.clock.now().Format(time.RFC3339), merchant)
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
		f := newFixture(t, webhooks.WorkerConfig{DisableAfter: time.Hour}, webhooks.Response{Err: errors.New("connection refused")}, webhooks.Response{Err: errors.New("connection refused")})
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
	// The same Idempotency-Key answers the same endpoint and secret.
	c := webhooks.CreateEndpoint{Principal: merchantA, URL: "https://example.com/k", EnabledEvents: []string{"*"}, IdempotencyKey: "k-1"}
	first, err := f.svc.Create(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.svc.Create(ctx, c)
	if err != nil || !again.Replayed || again.Endpoint.ID != first.Endpoint.ID || again.Secret != first.Secret {
		t.Errorf("replay: %+v, %v", again, err)
	}
	c.URL = "https://example.com/other"
	if _, err := f.svc.Create(ctx, c); !errors.Is(err, webhooks.ErrKeyReused) {
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
