// Package consumer is the start-up and shutdown of a service that consumes
// the payments events through the inbox (application/inbox), written once:
// the ledger and the webhooks service run it, and the next consumer starts
// from it, not from a copy of either.
//
// Start opens what every consumer needs, in order, each failure naming the
// variable at fault: the payments service's public keys, the logger and tracing, the database pool and its
// migrations, the SQS client, the queue's and the DLQ's attributes and the
// inbox retentions checked against them, the Prometheus registry with the
// consumer's, the inbox's and the HTTP metrics, and the event schemas. The
// service then builds its own parts on what Start opened — its store, its
// handler, its API, anything else it runs — and hands them to Serve, which
// wires the inbox in the configured mode with its processor, the SQS
// consumer that verifies each message's signature first, the DLQ watch, the inbox's gauges and retention jobs and the two
// listeners, runs them in one errgroup, and stops them together when the
// context ends. The service keeps its configuration (its own variables) and
// its subcommands.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/adapters/metrics"
	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/sqs"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/provenance"
	"github.com/payments-outbox/payments-outbox/application/retention"
	"github.com/payments-outbox/payments-outbox/cmd/internal/envconfig"
	"github.com/payments-outbox/payments-outbox/cmd/internal/lifecycle"
	"github.com/payments-outbox/payments-outbox/cmd/internal/telemetry"
)

// GaugeInterval is how often a consumer's gauges are counted (at most: the
// wait grows when counting is slow).
const GaugeInterval = 15 * time.Second

// Config is what the start-up reads of a consumer service's configuration,
// which the service's own loadConfig fills from its variables.
type Config struct {
	lifecycle.Common
	// Name is the service's name: its logs' and traces' service, the prefix
	// of its consumer metrics (<name>_dlq_messages) and, upper-cased, of the
	// variables its errors name (<NAME>_QUEUE_URL).
	Name string
	// Migrations are the service's embedded migrations, applied at start-up
	// when MigrateOnStart; they create its inbox table.
	Migrations fs.FS
	// PoolSize is the connection pool's size unless DATABASE_URL sets
	// pool_max_conns.
	PoolSize int

	QueueURL string
	DLQURL   string
	// Workers are the SQS consumer's receive loops; WaitTime the long-poll
	// wait of each receive.
	Workers  int
	WaitTime time.Duration
	// DLQPollInterval is how often the DLQ's depth is read.
	DLQPollInterval time.Duration
	// InboxRetention is how long a processed inbox row is kept, and
	// UnhandledRetention how long a row of a type this version does not
	// apply waits for a version that does; Start refuses either shorter
	// than the queues keep a message, plus inbox.RetentionMargin.
	InboxRetention     time.Duration
	UnhandledRetention time.Duration
	// Provenance is what each message's signature is verified with before
	// the inbox records it (ReadProvenance).
	Provenance Provenance
}

// Provenance is how a consumer tells the payments service's events from
// anyone else's: the service's public keys, by key id, and whether a
// message with no signature at all is accepted — the transition of a
// rollout while a producer that does not sign may still publish
// (docs/SECURITY.md, "Turning signatures on"), and only then.
type Provenance struct {
	Keys           provenance.KeySet
	AcceptUnsigned bool
}

// ReadProvenance reads the variables every consumer verifies the events
// with: PAYMENTS_PUBLIC_KEYS (keys separated by commas, each <key
// id>:<base64 public key>, as `payments signing-key create` prints one)
// and PAYMENTS_UNSIGNED_EVENTS (refuse, the default, or accept). A key set
// is required to consume (Start refuses none); the commands that only
// handle the queues, such as `dlq redrive`, need none.
func ReadProvenance(e *envconfig.Reader) Provenance {
	var p Provenance
	if v := e.String("PAYMENTS_PUBLIC_KEYS", ""); v != "" {
		keys, err := provenance.ParseKeySet(v)
		if err != nil {
			e.Fail(fmt.Errorf("PAYMENTS_PUBLIC_KEYS is invalid: %w", err))
		}
		p.Keys = keys
	}
	switch v := e.String("PAYMENTS_UNSIGNED_EVENTS", "refuse"); v {
	case "refuse":
	case "accept":
		p.AcceptUnsigned = true
	default:
		e.Fail(fmt.Errorf("PAYMENTS_UNSIGNED_EVENTS=%q is invalid: want refuse (every event must carry the payments service's signature) or accept (also apply events with none, while a producer that does not sign may still publish)", v))
	}
	return p
}

// variable is the name of the service's variable <NAME>_<suffix>.
func (c Config) variable(suffix string) string { return strings.ToUpper(c.Name) + "_" + suffix }

// Process is a consumer service once started: what Start opened, for the
// service to build its own parts on, and for Serve to run. Close releases it.
type Process struct {
	Log            *slog.Logger
	TracerProvider trace.TracerProvider // nil when tracing is off
	Pool           *pgxpool.Pool
	Registry       *prometheus.Registry
	HTTPMetrics    *httpserver.Metrics

	cfg     Config
	tracing *telemetry.Tracing
	client  sqs.API
	queue   sqs.QueueAttributes
	sqsm    *sqs.Metrics
	inboxm  *metrics.Inbox
	schemas inbox.Schemas
}

// Start opens what every consumer needs, logging to out. Its errors name
// the variable at fault; what it opened before one is released.
func Start(ctx context.Context, cfg Config, out io.Writer) (_ *Process, err error) {
	p := &Process{cfg: cfg, Log: lifecycle.NewLogger(out, cfg.LogLevel, cfg.Name)}
	if len(cfg.Provenance.Keys.IDs()) == 0 {
		return nil, errors.New("PAYMENTS_PUBLIC_KEYS is required: the payments service's public keys, which every event's signature is verified with")
	}
	if p.tracing, err = telemetry.Start(ctx, cfg.Tracing, cfg.Name, telemetry.FlushTimeout, p.Log); err != nil {
		return nil, err
	}
	p.TracerProvider = p.tracing.Provider
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	if p.Pool, err = postgres.Open(ctx, cfg.DatabaseURL, postgres.Config{DefaultMaxConns: cfg.PoolSize, TracerProvider: p.TracerProvider}); err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if cfg.MigrateOnStart {
		if err := lifecycle.Migrate(ctx, p.Pool, cfg.Migrations, p.Log); err != nil {
			return nil, err
		}
	}

	client, err := sqs.NewClient(ctx, cfg.AWSRegion, cfg.AWSEndpointURL)
	if err != nil {
		return nil, err
	}
	p.client = client
	if p.queue, err = sqs.ReadQueueAttributes(ctx, client, cfg.QueueURL); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.variable("QUEUE_URL"), err)
	}
	dlq, err := sqs.ReadQueueAttributes(ctx, client, cfg.DLQURL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.variable("DLQ_URL"), err)
	}
	// The inbox must remember a message id for as long as the broker can
	// redeliver the message, or a late redelivery would be applied twice;
	// and an unhandled row deleted while the broker can still redeliver its
	// message would come back as new: its end would not be the end.
	if err := inbox.CheckRetention(cfg.InboxRetention, p.queue.Retention, dlq.Retention); err != nil {
		return nil, fmt.Errorf("INBOX_RETENTION: %w", err)
	}
	if err := inbox.CheckRetention(cfg.UnhandledRetention, p.queue.Retention, dlq.Retention); err != nil {
		return nil, fmt.Errorf("INBOX_UNHANDLED_RETENTION: %w", err)
	}

	p.Registry = lifecycle.NewRegistry()
	p.sqsm = sqs.NewMetrics(p.Registry, cfg.Name)
	if p.inboxm, err = metrics.NewInbox(p.Registry); err != nil {
		return nil, err
	}
	p.HTTPMetrics = httpserver.NewMetrics(p.Registry)
	if p.schemas, err = eventschema.New(); err != nil {
		return nil, fmt.Errorf("event schemas: %w", err)
	}
	return p, nil
}

// Close closes the pool and flushes the traces.
func (p *Process) Close() {
	if p.Pool != nil {
		p.Pool.Close()
	}
	p.tracing.Shutdown()
}

// Store is what the start-up needs of a consumer's store: the inbox's ports
// with the consumer's repositories R (inboxstore.Store under the
// consumer's own), the retention of processed rows, and a readiness check.
type Store[R any] interface {
	inbox.Recorder[R]
	inbox.Backlog[R]
	inbox.Admin
	DeleteInboxBefore(ctx context.Context, cutoff time.Time, limit int) (int, error)
	Ping(ctx context.Context) error
}

// Service is what a consumer service brings to Serve.
type Service[R, E any] struct {
	// Store is the service's store: the inbox's ports, its stats, its
	// retention and /readyz.
	Store Store[R]
	// Inbox, when not nil, is what the inbox records and claims through
	// instead of Store: Store decorated (ledgertracing.Traced, webhookstracing.Inbox).
	Inbox interface {
		inbox.Recorder[R]
		inbox.Backlog[R]
	}
	// Handler is the service's inbox handler: what it applies and how.
	Handler inbox.Handler[R, E]
	// Mode is when a received message is applied; Processor the inbox
	// processor's tuning and hooks (Workers 0 runs none in this process:
	// another, such as `ledger inbox process`, applies).
	Mode      inbox.Mode
	Processor inbox.ProcessorConfig
	// API is the service's public API, served on HTTP_ADDR.
	API http.Handler
	// Run are the service's own loops (the webhooks delivery workers), run
	// beside the consumer until the context ends; each must then return.
	Run []func(ctx context.Context) error
	// Retention are the service's own retention jobs, beside the inbox's.
	Retention []retention.Job
	// LogAttrs are added to the line logged once listening.
	LogAttrs []any
}

// Serve runs svc on p until ctx ends — a signal — or one of its parts
// fails, then stops every part and returns once all have: the listeners
// and the SQS consumer within SHUTDOWN_TIMEOUT, the processor and the
// service's loops finishing what they hold. listening, when not nil,
// receives the addresses once serving.
func Serve[R, E any](ctx context.Context, p *Process, svc Service[R, E], listening chan<- lifecycle.Addrs) error {
	cfg, log := p.cfg, p.Log
	in := svc.Inbox
	if in == nil {
		in = svc.Store
	}
	// The processor runs in both modes: in the sync mode it applies the
	// rows of types an earlier version recorded without applying (and the
	// backlog left by a switch from async); in the async mode the receive
	// wakes it after each message it records.
	proc := inbox.NewProcessor(in, svc.Handler, p.schemas, log, p.inboxm, time.Now, svc.Processor)
	receiver := inbox.NewService(in, proc, time.Now, inbox.Config{Mode: svc.Mode})
	if svc.Mode == inbox.Async && svc.Processor.Workers == 0 {
		log.WarnContext(ctx, fmt.Sprintf("%s=0 in the async mode: this process only records; run `%s inbox process` to apply",
			cfg.variable("INBOX_WORKERS"), cfg.Name))
	}
	// Each message's signature is checked before the inbox sees it: one
	// the payments service did not sign goes to the DLQ, unrecorded.
	consumer := sqs.NewConsumer(p.client, receiver, cfg.QueueURL, log, p.sqsm, time.Now, sqs.Config{
		Workers: cfg.Workers, WaitTime: cfg.WaitTime, ShutdownTimeout: cfg.ShutdownTimeout,
		VisibilityTimeout: p.queue.VisibilityTimeout, TracerProvider: p.TracerProvider,
		Verifier: provenance.NewVerifier(cfg.Provenance.Keys, provenance.VerifierConfig{AcceptUnsigned: cfg.Provenance.AcceptUnsigned}), DLQURL: cfg.DLQURL,
	})
	if cfg.Provenance.AcceptUnsigned {
		log.WarnContext(ctx, "PAYMENTS_UNSIGNED_EVENTS=accept: events without a signature are applied (counted in "+cfg.Name+
			"_messages_unsigned_accepted_total); set refuse once every producer signs")
	}

	ops := httpserver.NewOpsRouter(svc.Store.Ping, log, p.HTTPMetrics, httpserver.OpsConfig{Gatherer: p.Registry})
	servers, err := lifecycle.Listen(cfg.HTTPAddr, cfg.OpsAddr, svc.API, ops, log)
	if err != nil {
		return err
	}
	at := servers.Addrs()
	log.InfoContext(ctx, "listening", append([]any{"addr", at.API, "ops_addr", at.Ops, "queue", cfg.QueueURL, "workers", cfg.Workers,
		"inbox_mode", svc.Mode.String(), "inbox_workers", svc.Processor.Workers,
		"payments_public_keys", cfg.Provenance.Keys.IDs(), "unsigned_events_accepted", cfg.Provenance.AcceptUnsigned}, svc.LogAttrs...)...)
	if listening != nil {
		listening <- at
	}

	g, gctx := errgroup.WithContext(ctx)
	servers.Serve(gctx, g, cfg.ShutdownTimeout, func() {
		log.Info("shutting down: no new receives or claims; letting those in flight finish", "wait_time", cfg.WaitTime, "shutdown_timeout", cfg.ShutdownTimeout)
	})
	// The consumer stops receiving when gctx ends and returns once the
	// receives in flight have returned and every batch in hand is committed
	// and acknowledged, or released when SHUTDOWN_TIMEOUT runs out.
	g.Go(func() error { return consumer.Run(gctx) })
	g.Go(func() error { return sqs.WatchDLQ(gctx, p.client, cfg.DLQURL, cfg.DLQPollInterval, p.sqsm, log) })
	// Like the consumer, the processor claims nothing once gctx ends and
	// finishes (or rolls back) the batch in hand.
	if svc.Processor.Workers > 0 {
		g.Go(func() error { return proc.Run(gctx) })
	}
	g.Go(func() error { return proc.RefreshGauges(gctx, svc.Store, GaugeInterval) })
	for _, run := range svc.Run {
		g.Go(func() error { return run(gctx) })
	}
	jobs := append([]retention.Job{
		{Name: "inbox", Delete: svc.Store.DeleteInboxBefore, Retention: cfg.InboxRetention, Every: time.Hour, Batch: 1000},
		{Name: "unhandled inbox", Delete: proc.ExpireUnhandled(svc.Store, p.inboxm), Retention: cfg.UnhandledRetention, Every: time.Hour, Batch: 1000},
	}, svc.Retention...)
	for _, job := range jobs {
		g.Go(func() error { return retention.Run(gctx, job, time.Now, log) })
	}
	return g.Wait()
}
