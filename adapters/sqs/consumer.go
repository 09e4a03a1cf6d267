package sqs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/provenance"
)

// API is the part of the SQS client this package uses. *sqs.Client satisfies
// it; tests wrap the real client to lose acknowledgements on purpose.
type API interface {
	ReceiveMessage(ctx context.Context, in *awssqs.ReceiveMessageInput, opts ...func(*awssqs.Options)) (*awssqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *awssqs.DeleteMessageBatchInput, opts ...func(*awssqs.Options)) (*awssqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *awssqs.ChangeMessageVisibilityInput, opts ...func(*awssqs.Options)) (*awssqs.ChangeMessageVisibilityOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *awssqs.ChangeMessageVisibilityBatchInput, opts ...func(*awssqs.Options)) (*awssqs.ChangeMessageVisibilityBatchOutput, error)
	GetQueueAttributes(ctx context.Context, in *awssqs.GetQueueAttributesInput, opts ...func(*awssqs.Options)) (*awssqs.GetQueueAttributesOutput, error)
	SendMessageBatch(ctx context.Context, in *awssqs.SendMessageBatchInput, opts ...func(*awssqs.Options)) (*awssqs.SendMessageBatchOutput, error)
	StartMessageMoveTask(ctx context.Context, in *awssqs.StartMessageMoveTaskInput, opts ...func(*awssqs.Options)) (*awssqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, in *awssqs.ListMessageMoveTasksInput, opts ...func(*awssqs.Options)) (*awssqs.ListMessageMoveTasksOutput, error)
}

// Handler receives one message body into the inbox and returns only after
// its transaction committed, in whichever mode the inbox runs;
// *inbox.Service satisfies it. Errors wrapping inbox.ErrMalformed or
// inbox.ErrInvalidEvent mark a poison message.
type Handler interface {
	Receive(ctx context.Context, body []byte) (inbox.Result, error)
}

// BatchBudget is what a stop needs on top of the long-poll wait: once the
// receives in flight have returned (within WaitTime), the batches in hand are
// applied and acknowledged. A ShutdownTimeout shorter than WaitTime +
// BatchBudget makes a stop release what those receives return instead of
// applying it, and a released message has spent one of its receives.
const BatchBudget = 5 * time.Second

// receiveSlack is how long a receive may outlast its wait before the consumer
// gives up on it: generous for a loaded broker, so that only one that stopped
// answering reaches it. A receive is never cancelled earlier, not even by a
// stop (see receive).
const receiveSlack = 10 * time.Second

// DefaultWorkers is Config.Workers' default (the ledger passes it as its
// variable's default).
const DefaultWorkers = 4

// Config tunes a Consumer. Zero values take the defaults in brackets.
type Config struct {
	// Workers is the number of concurrent receive loops [DefaultWorkers].
	Workers int
	// WaitTime is the long-poll wait of each receive, in whole seconds [20s,
	// the SQS maximum]: an idle queue costs one request per worker per
	// WaitTime, and a stop waits up to WaitTime for the receives in flight.
	WaitTime time.Duration
	// ShutdownTimeout bounds a stop [WaitTime + BatchBudget]. Once ctx is
	// cancelled no receive starts; the receives in flight return and their
	// messages are applied like any batch. When ShutdownTimeout has passed,
	// the message being applied is rolled back and what is not applied is
	// released: made visible again at once, for the next replica.
	ShutdownTimeout time.Duration
	// MaxMessages per receive [10, the SQS maximum].
	MaxMessages int32
	// VisibilityTimeout is the queue's visibility timeout [30s]; a message
	// still being handled after half of it has it extended by a whole one.
	VisibilityTimeout time.Duration
	// AckTimeout bounds each delete after commit, and each release, also
	// during shutdown [10s].
	AckTimeout time.Duration
	// HandlerTimeout bounds one message's transaction [1m], so a hung
	// database cannot hold a worker (or a shutdown) forever. The message is
	// then left for redelivery, and the rest of its batch is released.
	HandlerTimeout time.Duration
	// Verifier, when set, checks each message's signature before the
	// handler sees it (provenance.go): a message that fails is copied to
	// DLQURL with its reason, deleted from the queue and counted, and the
	// handler never sees it. Nil checks nothing: the consumer's own tests.
	Verifier *provenance.Verifier
	// DLQURL is the queue's dead-letter queue, where a message that fails
	// verification goes.
	DLQURL string
	// TracerProvider, when set, traces each message's handling as a span
	// ("process <type>", kind consumer) that continues the producer's trace:
	// the child of the message attribute traceparent. Nil: no span; the
	// inbox keeps the event's trace id either way, read from the event
	// itself (inbox.Event.TraceID).
	TracerProvider trace.TracerProvider
}

// Consumer receives messages from one queue and applies them through a Handler.
type Consumer struct {
	api      API
	h        Handler
	queueURL string
	log      *slog.Logger
	metrics  *Metrics
	now      func() time.Time
	cfg      Config
	tracer   trace.Tracer
}

// withDefaults returns c with each zero value replaced by its default (in
// brackets on the fields).
func (c Config) withDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.WaitTime <= 0 {
		c.WaitTime = 20 * time.Second
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = c.WaitTime + BatchBudget
	}
	if c.MaxMessages <= 0 {
		c.MaxMessages = 10
	}
	if c.VisibilityTimeout <= 0 {
		c.VisibilityTimeout = 30 * time.Second
	}
	if c.AckTimeout <= 0 {
		c.AckTimeout = 10 * time.Second
	}
	if c.HandlerTimeout <= 0 {
		c.HandlerTimeout = time.Minute
	}
	return c
}

// NewConsumer returns a consumer of the queue at queueURL that applies
// through h, logs to log and counts in metrics (NewMetrics); now is the
// clock. Run starts it.
func NewConsumer(api API, h Handler, queueURL string, log *slog.Logger, metrics *Metrics, now func() time.Time, cfg Config) *Consumer {
	cfg = cfg.withDefaults()
	return &Consumer{api: api, h: h, queueURL: queueURL, log: log, metrics: metrics, now: now, cfg: cfg, tracer: tracing.Tracer(cfg.TracerProvider)}
}

// Run receives and applies messages with cfg.Workers loops until ctx is
// cancelled, then drains: no receive starts, the receives in flight return
// (within WaitTime) and every batch in hand is applied and acknowledged.
// What is still unapplied ShutdownTimeout after the cancellation is released.
// Run returns nil once every loop has finished.
//
// A stop never abandons a receive: a long poll whose caller went away may
// still be handed messages by the broker, which then hides them for the
// visibility timeout and charges them a receive nobody used. A few restarts
// would push a good message past the queue's maxReceiveCount into the DLQ.
func (c *Consumer) Run(ctx context.Context) error {
	// handling is the context the messages are applied on, detached from
	// ctx: a stop lets it run, and only abandon, when the stop's budget runs
	// out, ends it.
	handling, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	var loops, timer sync.WaitGroup
	for w := range c.cfg.Workers {
		loops.Go(func() { c.loop(ctx, handling, w) })
	}
	finished := make(chan struct{})
	timer.Go(func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		t := time.NewTimer(c.cfg.ShutdownTimeout)
		defer t.Stop()
		select {
		case <-finished:
		case <-t.C:
			c.log.Warn("shutdown timeout reached: releasing the messages not applied yet", "shutdown_timeout", c.cfg.ShutdownTimeout)
			abandon()
		}
	})
	loops.Wait()
	close(finished)
	timer.Wait()
	return nil
}

// loop is one worker: it checks for a stop before each receive, never during one.
func (c *Consumer) loop(ctx, handling context.Context, worker int) {
	backoff := time.Second
	for ctx.Err() == nil {
		out, err := c.receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			// A broker outage delays work but loses nothing: back off and retry.
			c.log.WarnContext(ctx, "sqs receive failed", "worker", worker, "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = time.Second
		if len(out.Messages) > 0 {
			c.handleBatch(ctx, handling, out.Messages)
		}
	}
}

// receive long-polls once, on a context a stop does not cancel: the broker
// never learns that a caller went away, so a cancelled receive would still
// take messages. It is bounded by the wait instead (plus receiveSlack).
func (c *Consumer) receive(ctx context.Context) (*awssqs.ReceiveMessageOutput, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.WaitTime+receiveSlack)
	defer cancel()
	return c.api.ReceiveMessage(rctx, &awssqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(c.queueURL),
		MaxNumberOfMessages:         c.cfg.MaxMessages,
		WaitTimeSeconds:             int32(c.cfg.WaitTime / time.Second),
		MessageSystemAttributeNames: receivedSystemAttributes,
		MessageAttributeNames:       receivedAttributes,
	})
}

// verdict is what becomes of a message once its handler returned.
type verdict int

const (
	ack       verdict = iota // committed: delete it
	retry                    // failed: left hidden until the visibility timeout, then redelivered
	expired                  // like retry, but its handler ran out of HandlerTimeout: the rest of the batch is released
	poison                   // can never apply: already made visible, on its way to the DLQ
	abandoned                // rolled back because the stop's budget ran out: release it
)

// handleBatch applies the messages one by one, deletes those that committed
// and releases those it did not apply. Work runs on contexts detached from
// ctx, so that a stop never interrupts a commit half way and the batch that
// a receive returns during a stop is applied like any other. Only the end of
// handling (a stop's budget ran out) or a handler timeout ends a batch early;
// the rest of it is released rather than left hidden for the visibility
// timeout.
func (c *Consumer) handleBatch(ctx, handling context.Context, msgs []types.Message) {
	work := context.WithoutCancel(ctx)
	inflight := newPending(msgs)
	stopKeep := make(chan struct{})
	var keep sync.WaitGroup
	keep.Go(func() { c.keepInvisible(work, inflight, stopKeep) })

	var acks, unapplied []types.Message
	next := 0
	for next < len(msgs) && handling.Err() == nil {
		m := msgs[next]
		next++
		v := c.handle(handling, m)
		inflight.done(aws.ToString(m.MessageId))
		switch v {
		case ack:
			acks = append(acks, m)
		case abandoned:
			unapplied = append(unapplied, m)
		}
		if v == expired {
			// A hung database would hold every other message of the batch
			// as long: release them for a worker whose connection works.
			break
		}
	}
	unapplied = append(unapplied, msgs[next:]...)
	close(stopKeep)
	keep.Wait()
	c.release(work, unapplied)
	c.ack(work, acks)
}

// The message attributes the consumer reads: the event type, to name the
// processing span, and the W3C trace context the producer sent.
const attrType = "type"

// handle applies one message and says what to do with it, in a span that
// continues the producer's trace.
func (c *Consumer) handle(handling context.Context, m types.Message) (v verdict) {
	if v, ok := c.checkOrigin(handling, m); !ok {
		return v // not the payments service's: nothing of it is handled
	}
	handling = tracing.Extract(handling, messageAttr(m, tracing.TraceParent), messageAttr(m, tracing.TraceState))
	name := "process message"
	if typ := messageAttr(m, attrType); typ != "" && len(typ) <= inbox.MaxTypeLen {
		name = "process " + typ
	}
	handling, span := c.tracer.Start(handling, name,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("messaging.system", "aws_sqs"),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", c.queueURL),
			attribute.String("messaging.message.id", aws.ToString(m.MessageId)),
		))
	defer func() {
		if v != ack {
			span.SetStatus(codes.Error, "not applied")
		}
		span.End()
	}()
	hctx, cancel := context.WithTimeout(handling, c.cfg.HandlerTimeout)
	res, err := c.h.Receive(hctx, []byte(aws.ToString(m.Body)))
	timedOut := errors.Is(hctx.Err(), context.DeadlineExceeded)
	cancel()
	if err != nil {
		span.RecordError(err)
	}
	log := c.log.With("sqs_message_id", aws.ToString(m.MessageId), "receive_count", m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	switch {
	case errors.Is(err, inbox.ErrMalformed), errors.Is(err, inbox.ErrInvalidEvent):
		c.metrics.failures.WithLabelValues("poison").Inc()
		log.WarnContext(handling, "poison message left for the DLQ", "event_id", res.MessageID, "err", bounded(err))
		// It will fail the same way every time: make it visible again at
		// once so it reaches maxReceiveCount (and the DLQ) quickly.
		c.makeVisible(context.WithoutCancel(handling), m)
		return poison
	case err != nil && handling.Err() != nil:
		log.InfoContext(handling, "message rolled back at the end of the shutdown timeout; releasing it", "event_id", res.MessageID, "err", bounded(err))
		return abandoned
	case err != nil:
		c.metrics.failures.WithLabelValues("error").Inc()
		log.ErrorContext(handling, "message not applied; it will be redelivered", "event_id", res.MessageID, "err", bounded(err))
		if timedOut {
			return expired
		}
		return retry
	}
	span.SetAttributes(
		attribute.String("cloudevents.event_id", res.MessageID),
		attribute.String("cloudevents.event_type", res.Type),
		attribute.String("inbox.outcome", res.Disposition.String()))
	c.metrics.processed.WithLabelValues(res.Disposition.String()).Inc()
	switch res.Disposition {
	case inbox.Duplicate:
		c.metrics.duplicates.Inc()
		if res.Conflicting {
			// Not a redelivery: another message under a recorded id. The
			// first is kept; this one may be a forgery or a producer bug.
			c.metrics.conflicts.Inc()
			log.WarnContext(handling, "a message reused a recorded event id with another body; dropped, the first kept", "event_id", res.MessageID, "type", res.Type)
			break
		}
		log.DebugContext(handling, "duplicate suppressed", "event_id", res.MessageID, "type", res.Type)
	case inbox.Ignored:
		log.InfoContext(handling, "event type not handled; recorded and acknowledged", "event_id", res.MessageID, "type", res.Type)
	case inbox.Recorded:
		log.DebugContext(handling, "recorded for the inbox processor", "event_id", res.MessageID, "type", res.Type)
	case inbox.Parked:
		log.ErrorContext(handling, "message parked in the inbox (the row holds the reason) and acknowledged; the service's `inbox retry` applies it again once the cause is fixed",
			"event_id", res.MessageID, "type", res.Type)
	case inbox.Applied:
		if !res.EventTime.IsZero() {
			c.metrics.eventAge.Observe(max(0, c.now().Sub(res.EventTime).Seconds()))
		}
	}
	return ack
}

// maxLoggedError bounds an error's text in a log line: an error that
// quotes what a message carried (a schema's complaint, a forged field) must
// not copy most of a 256 KiB message into the log on every receive.
const maxLoggedError = 1 << 10

// bounded is err's text for a log line, cut at maxLoggedError bytes.
func bounded(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if len(s) > maxLoggedError {
		return strings.ToValidUTF8(s[:maxLoggedError], "") + "…"
	}
	return s
}

func (c *Consumer) makeVisible(ctx context.Context, m types.Message) {
	_, err := c.api.ChangeMessageVisibility(ctx, &awssqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(c.queueURL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
	})
	if err != nil {
		c.log.DebugContext(ctx, "reset visibility failed", "err", err)
	}
}

// release makes messages received but not applied visible again at once, so
// that the next worker or replica takes them now instead of after the
// visibility timeout. Their receive is spent either way. A failed release is
// logged: those messages come back after the visibility timeout.
func (c *Consumer) release(ctx context.Context, msgs []types.Message) {
	if len(msgs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.AckTimeout)
	defer cancel()
	c.metrics.released.Add(float64(len(msgs)))
	out, err := c.api.ChangeMessageVisibilityBatch(ctx, &awssqs.ChangeMessageVisibilityBatchInput{
		QueueUrl: aws.String(c.queueURL), Entries: visibilityEntries(msgs, 0),
	})
	switch {
	case err != nil:
		c.log.WarnContext(ctx, "release failed; the messages come back after the visibility timeout", "messages", len(msgs), "err", err)
	case len(out.Failed) > 0:
		c.log.WarnContext(ctx, "release failed for some messages; they come back after the visibility timeout", "failed", len(out.Failed))
	default:
		c.log.InfoContext(ctx, "released messages not applied", "messages", len(msgs))
	}
}

// ack deletes committed messages in one batch. A failed delete is logged and
// counted, never retried here: the message comes back and the inbox absorbs it.
func (c *Consumer) ack(ctx context.Context, msgs []types.Message) {
	if len(msgs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.AckTimeout)
	defer cancel()
	entries := make([]types.DeleteMessageBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
	}
	out, err := c.api.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(c.queueURL), Entries: entries})
	if err != nil {
		c.metrics.ackFailed.Add(float64(len(msgs)))
		c.log.WarnContext(ctx, "delete after commit failed; the inbox will absorb the redeliveries", "messages", len(msgs), "err", err)
		return
	}
	for _, f := range out.Failed {
		c.metrics.ackFailed.Inc()
		c.log.WarnContext(ctx, "delete after commit failed; the inbox will absorb the redelivery",
			"entry", aws.ToString(f.Id), "code", aws.ToString(f.Code), "message", aws.ToString(f.Message))
	}
}

// keepInvisible extends the visibility of the batch's unfinished messages
// every half visibility timeout until stop closes, so a slow handler (a
// database under load) never lets another worker apply the same message
// concurrently. That would be harmless — the inbox serialises them — but
// wasteful, and it would count a false duplicate.
func (c *Consumer) keepInvisible(ctx context.Context, p *pending, stop <-chan struct{}) {
	t := time.NewTicker(c.cfg.VisibilityTimeout / 2)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		left := p.remaining()
		if len(left) == 0 {
			return
		}
		out, err := c.api.ChangeMessageVisibilityBatch(ctx, &awssqs.ChangeMessageVisibilityBatchInput{
			QueueUrl: aws.String(c.queueURL), Entries: visibilityEntries(left, c.cfg.VisibilityTimeout),
		})
		switch {
		case err != nil:
			c.log.WarnContext(ctx, "extend visibility failed", "err", err)
		case len(out.Failed) > 0:
			c.log.WarnContext(ctx, "extend visibility failed for some messages", "failed", len(out.Failed))
		}
	}
}

// visibilityEntries sets each message's visibility timeout to d (0: visible now).
func visibilityEntries(msgs []types.Message, d time.Duration) []types.ChangeMessageVisibilityBatchRequestEntry {
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: int32(d / time.Second),
		}
	}
	return entries
}

// pending tracks the messages of a batch that are not finished yet.
type pending struct {
	mu   sync.Mutex
	msgs map[string]types.Message
}

func newPending(msgs []types.Message) *pending {
	p := &pending{msgs: make(map[string]types.Message, len(msgs))}
	for _, m := range msgs {
		p.msgs[aws.ToString(m.MessageId)] = m
	}
	return p
}

func (p *pending) done(id string) {
	p.mu.Lock()
	delete(p.msgs, id)
	p.mu.Unlock()
}

func (p *pending) remaining() []types.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]types.Message, 0, len(p.msgs))
	for _, m := range p.msgs {
		out = append(out, m)
	}
	return out
}

// QueueAttributes are the queue settings a consuming service checks at start-up.
type QueueAttributes struct {
	ARN               string
	VisibilityTimeout time.Duration
	Retention         time.Duration // MessageRetentionPeriod
}

// ReadQueueAttributes reads the queue's ARN, visibility timeout and message
// retention period.
func ReadQueueAttributes(ctx context.Context, api API, queueURL string) (QueueAttributes, error) {
	out, err := api.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameQueueArn, types.QueueAttributeNameVisibilityTimeout, types.QueueAttributeNameMessageRetentionPeriod,
		},
	})
	if err != nil {
		return QueueAttributes{}, fmt.Errorf("get attributes of %s: %w", queueURL, err)
	}
	qa := QueueAttributes{ARN: out.Attributes[string(types.QueueAttributeNameQueueArn)]}
	if qa.VisibilityTimeout, err = seconds(out.Attributes, types.QueueAttributeNameVisibilityTimeout); err != nil {
		return QueueAttributes{}, fmt.Errorf("%s: %w", queueURL, err)
	}
	if qa.Retention, err = seconds(out.Attributes, types.QueueAttributeNameMessageRetentionPeriod); err != nil {
		return QueueAttributes{}, fmt.Errorf("%s: %w", queueURL, err)
	}
	return qa, nil
}

func seconds(attrs map[string]string, name types.QueueAttributeName) (time.Duration, error) {
	n, err := strconv.Atoi(attrs[string(name)])
	if err != nil {
		return 0, fmt.Errorf("attribute %s = %q: %w", name, attrs[string(name)], err)
	}
	return time.Duration(n) * time.Second, nil
}

// WatchDLQ sets the DLQ depth gauge from the DLQ's
// ApproximateNumberOfMessages every interval until ctx is cancelled. A failed
// read is logged and retried at the next tick.
func WatchDLQ(ctx context.Context, api API, dlqURL string, interval time.Duration, m *Metrics, log *slog.Logger) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		out, err := api.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
			QueueUrl:       aws.String(dlqURL),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
		})
		if err == nil {
			var n int
			n, err = strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
			m.dlqDepth.Set(float64(n))
		}
		if err != nil && ctx.Err() == nil {
			log.WarnContext(ctx, "read dlq depth failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// messageAttr returns the string value of m's message attribute name, or "".
func messageAttr(m types.Message, name string) string {
	return aws.ToString(m.MessageAttributes[name].StringValue)
}
