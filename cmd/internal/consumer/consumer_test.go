package consumer_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/inboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/provenance"
	"github.com/payments-outbox/payments-outbox/application/provenance/provenancetest"
	"github.com/payments-outbox/payments-outbox/cmd/internal/consumer"
	"github.com/payments-outbox/payments-outbox/cmd/internal/envconfig"
	"github.com/payments-outbox/payments-outbox/cmd/internal/lifecycle"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// audit is a fourth consumer's handler, as a team forking the repository
// would write one: it applies payment.created and writes nothing of its
// own, only counting what it applied.
type audit struct{ applied atomic.Int64 }

func (*audit) Types() map[string][]string { return map[string][]string{"payment.created": {"1"}} }
func (*audit) Ignored() map[string]string { return nil }
func (*audit) Check(ev inbox.Event, _ string) (string, error) {
	return ev.ID, nil
}
func (*audit) Compare(a, b string) int { return strings.Compare(a, b) }
func (h *audit) Apply(context.Context, struct{}, string, time.Time) (bool, error) {
	h.applied.Add(1)
	return true, nil
}

// auditStore is its store: the shared inbox, no table of its own.
type auditStore struct {
	*inboxstore.Store[struct{}]
	pool *pgxpool.Pool
}

func (s auditStore) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// TestAFourthConsumerStartsFromTheSkeleton: a consumer that is neither the
// ledger nor the webhooks service needs only its configuration, its store
// and its handler to consume its queue through the inbox: a payment event
// published to its topic is applied once, its series carry its own name,
// and it stops when its context ends.
func TestAFourthConsumerStartsFromTheSkeleton(t *testing.T) {
	t.Parallel()
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{})
	payments := provenancetest.NewSigner("payments")
	keys, err := provenance.NewKeySet(payments.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	cfg := consumer.Config{
		Common: lifecycle.Common{
			DatabaseURL: pgtest.NewDatabase(t), HTTPAddr: "127.0.0.1:0", OpsAddr: "127.0.0.1:0",
			AWSRegion: tq.Config.Region, AWSEndpointURL: awstest.Endpoint(t),
			LogLevel: slog.LevelDebug, MigrateOnStart: true, ShutdownTimeout: 10 * time.Second,
		},
		Name: "audit",
		// The ledger's migrations create the inbox table (and the ledger's,
		// which this consumer leaves alone).
		Migrations: ledgermigrations.FS, PoolSize: 4,
		QueueURL: tq.QueueURL, DLQURL: tq.DLQURL, Workers: 1, WaitTime: time.Second, DLQPollInterval: time.Minute,
		InboxRetention: 15 * 24 * time.Hour, UnhandledRetention: 15 * 24 * time.Hour,
		Provenance: consumer.Provenance{Keys: keys},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &logtest.Buffer{}
	p, err := consumer.Start(ctx, cfg, logs)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	h := &audit{}
	store := auditStore{Store: inboxstore.New(p.Pool, func(inboxstore.Tx) struct{} { return struct{}{} }), pool: p.Pool}
	listening := make(chan lifecycle.Addrs, 1)
	done := make(chan error, 1)
	go func() {
		done <- consumer.Serve(ctx, p, consumer.Service[struct{}, string]{
			Store: store, Handler: h, Processor: inbox.ProcessorConfig{Workers: 1}, API: http.NotFoundHandler(),
		}, listening)
	}()
	var at lifecycle.Addrs
	select {
	case at = <-listening:
	case err := <-done:
		t.Fatalf("Serve: %v\n%s", err, logs)
	case <-time.After(time.Minute):
		t.Fatal("the consumer did not start")
	}

	paymentID := uuid.NewString()
	body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":%q,"amount":1050,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1"}}`,
		uuid.NewString(), paymentID, time.Now().UTC().Format(time.RFC3339Nano), paymentID)
	if _, err := tq.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(tq.TopicARN), Message: aws.String(body),
		MessageAttributes: awstest.SNSAttributes(payments.Sign([]byte(body)))}); err != nil {
		t.Fatal(err)
	}
	const want = `audit_messages_processed_total{outcome="applied"} 1`
	for deadline := time.Now().Add(time.Minute); !strings.Contains(scrape(t, at.Ops), want); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after a minute; logs:\n%s", want, logs)
		}
	}
	if n := h.applied.Load(); n != 1 {
		t.Errorf("the handler applied %d events, want 1", n)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after the stop: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return after its context ended")
	}
}

func scrape(t *testing.T, ops string) string {
	t.Helper()
	res, err := http.Get("http://" + ops + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEveryConsumerVerifiesWithThePaymentsKeys: the variables are read
// alike by every consumer, and a consumer without the payments service's
// public keys does not start: it could tell no event of theirs from a
// forgery.
func TestEveryConsumerVerifiesWithThePaymentsKeys(t *testing.T) {
	t.Parallel()
	key := provenancetest.NewSigner("k1").PublicKey().String()
	read := func(vars map[string]string) (consumer.Provenance, error) {
		e := envconfig.New(func(k string) string { return vars[k] })
		p := consumer.ReadProvenance(e)
		return p, e.Err()
	}
	if p, err := read(map[string]string{"PAYMENTS_PUBLIC_KEYS": key}); err != nil || p.AcceptUnsigned || len(p.Keys.IDs()) != 1 {
		t.Errorf("one key, the default policy: %+v, %v; want the key, unsigned events refused", p, err)
	}
	if p, err := read(map[string]string{"PAYMENTS_PUBLIC_KEYS": key, "PAYMENTS_UNSIGNED_EVENTS": "accept"}); err != nil || !p.AcceptUnsigned {
		t.Errorf("PAYMENTS_UNSIGNED_EVENTS=accept: %+v, %v; want unsigned events accepted", p, err)
	}
	for _, bad := range []map[string]string{
		{"PAYMENTS_PUBLIC_KEYS": "k1"},
		{"PAYMENTS_PUBLIC_KEYS": key + "," + key},
		{"PAYMENTS_PUBLIC_KEYS": key, "PAYMENTS_UNSIGNED_EVENTS": "yes"},
	} {
		if _, err := read(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: got %v, want one line naming the variable", bad, err)
		}
	}
	_, err := consumer.Start(context.Background(), consumer.Config{Name: "audit"}, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), "PAYMENTS_PUBLIC_KEYS is required") {
		t.Errorf("Start without keys: got %v, want PAYMENTS_PUBLIC_KEYS is required", err)
	}
}
