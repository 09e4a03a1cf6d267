package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/payments-outbox/payments-outbox/application/claimloop"
)

// The defaults of the WorkerConfig fields a deployment sets (cmd/webhooks
// passes them as its variables' defaults): each stated here once.
const (
	DefaultDeliveryWorkers = 16
	DefaultPerEndpoint     = 4
	DefaultPerMerchant     = 8
	DefaultAttemptTimeout  = 15 * time.Second
	DefaultDisableAfter    = 120 * time.Hour
)

// WorkerConfig tunes a Worker. Zero fields take the defaults named on each.
type WorkerConfig struct {
	// Workers is how many attempts run at once in this process;
	// DefaultDeliveryWorkers.
	Workers int
	// PerEndpoint caps the attempts in flight to one endpoint, across every
	// worker and replica (the claim enforces it), so that one slow endpoint
	// cannot take all the workers; DefaultPerEndpoint. An endpoint whose last
	// attempt timed out has one in flight at most, until it answers again.
	PerEndpoint int
	// PerMerchant caps the attempts in flight to one merchant's endpoints,
	// across every worker and replica: the merchant's share, so that no
	// number of endpoints, redeliveries or recoveries of one merchant
	// takes the workers from the others; DefaultPerMerchant.
	PerMerchant int
	// AttemptTimeout bounds one attempt, from dial to the answer's last
	// byte read; DefaultAttemptTimeout. An endpoint that keeps timing out is given
	// less (budget).
	AttemptTimeout time.Duration
	// DisableAfter disables an endpoint whose attempts have all failed for
	// this long; DefaultDisableAfter.
	DisableAfter time.Duration
	// PollInterval is how often an idle worker claims when nothing wakes
	// it; default 1s.
	PollInterval time.Duration
	// StopGrace is how long, once Run's context ends, the attempts in
	// flight may still take; the ones that do not finish in time are cut
	// and their leases released, for another replica to send at once.
	// Default 15s.
	StopGrace time.Duration
}

func (c WorkerConfig) withDefaults() WorkerConfig {
	if c.Workers <= 0 {
		c.Workers = DefaultDeliveryWorkers
	}
	if c.PerEndpoint <= 0 {
		c.PerEndpoint = DefaultPerEndpoint
	}
	if c.PerMerchant <= 0 {
		c.PerMerchant = DefaultPerMerchant
	}
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = DefaultAttemptTimeout
	}
	if c.DisableAfter <= 0 {
		c.DisableAfter = DefaultDisableAfter
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.StopGrace <= 0 {
		c.StopGrace = 15 * time.Second
	}
	return c
}

// leaseMargin is how much longer than an attempt a lease lasts: time to
// record the attempt after its answer. A lease that passes means the worker
// died, and another sends the delivery again (the same webhook-id).
const leaseMargin = 30 * time.Second

// writeTimeout bounds the writes after an attempt, during a stop too.
const writeTimeout = 10 * time.Second

// WorkerMetrics is what the delivery workers report (adapters/webhooksmetrics); nil
// records nothing.
type WorkerMetrics interface {
	// Attempted counts an attempt by outcome (delivered, failed, gone,
	// timeout, refused) with its duration.
	Attempted(outcome string, d time.Duration)
	// Disabled counts an endpoint disabled, by reason (gone, failing).
	Disabled(reason string)
	// Backlog sets the deliveries' gauges.
	Backlog(DeliveryStats)
}

type noWorkerMetrics struct{}

func (noWorkerMetrics) Attempted(string, time.Duration) {}
func (noWorkerMetrics) Disabled(string)                 {}
func (noWorkerMetrics) Backlog(DeliveryStats)           {}

// Worker sends the deliveries: each worker claims one due delivery with a
// lease, signs it and POSTs it outside any transaction, then records the
// attempt and the delivery's next state — delivered, retried on the
// schedule, parked when the schedule is spent — and disables the endpoint
// on a 410 Gone or after DisableAfter of nothing but failures. Any number
// of workers and replicas share the deliveries: the claim skips leased
// ones. At-least-once: a worker that dies mid-attempt leaves a lease that
// passes, and the delivery is sent again, with the same webhook-id.
type Worker struct {
	store   Deliveries
	sender  Sender
	sealer  *Sealer
	sched   *Schedule
	log     *slog.Logger
	metrics WorkerMetrics
	now     func() time.Time
	cfg     WorkerConfig
	loop    *claimloop.Loop
}

// NewWorker returns a Worker claiming from store and sending with sender,
// opening secrets with sealer and retrying on sched. metrics may be nil;
// now is the clock.
func NewWorker(store Deliveries, sender Sender, sealer *Sealer, sched *Schedule, log *slog.Logger, metrics WorkerMetrics, now func() time.Time, cfg WorkerConfig) *Worker {
	cfg = cfg.withDefaults()
	if metrics == nil {
		metrics = noWorkerMetrics{}
	}
	w := &Worker{store: store, sender: sender, sealer: sealer, sched: sched, log: log, metrics: metrics, now: now, cfg: cfg}
	w.loop = claimloop.New(claimloop.Whole(w.drain), func(ctx context.Context, err error) {
		w.log.WarnContext(ctx, "webhook delivery: claim failed; retrying at next poll", "err", err)
	}, claimloop.Config{Workers: cfg.Workers, BatchSize: oneAttemptIsNotABacklog, PollInterval: cfg.PollInterval})
	return w
}

// oneAttemptIsNotABacklog is the claim loop's batch size: above anything
// drain reports, so no claim counts as a full batch. A full batch makes the
// loop drain, and a full sweep wakes every worker; with a batch of one, each
// delivery did both, and at a steady rate most of those claims found
// nothing. The worker spreads and drains by itself instead (drain, Step).
const oneAttemptIsNotABacklog = 2

// drain is a worker's claim: Steps, one delivery each, until one finds
// nothing due (or the stop), so a worker whose attempt ended goes on with
// the next due delivery — of an endpoint at its cap, the one its attempt
// made room for. It reports at most 1: the loop never counts it full.
func (w *Worker) drain(ctx context.Context) (int, error) {
	n := 0
	for ctx.Err() == nil {
		got, err := w.Step(ctx)
		if err != nil || got == 0 {
			return n, err
		}
		n = 1
	}
	return n, nil
}

// Wake asks an idle worker to claim now: the fan-out committed
// deliveries. It never blocks.
func (w *Worker) Wake() { w.loop.Wake() }

// Run sends until ctx ends, then claims nothing more, lets the attempts in
// flight finish within StopGrace (cutting and releasing the others), and
// returns nil.
func (w *Worker) Run(ctx context.Context) error { return w.loop.Run(ctx) }

// Step claims one due delivery, sends it and records the attempt. It
// returns how many it claimed (0 or 1). Exported so that tests drive the
// worker one attempt at a time.
func (w *Worker) Step(ctx context.Context) (int, error) {
	if ctx.Err() != nil {
		return 0, nil
	}
	now := w.now()
	claimed, err := w.store.ClaimDeliveries(ctx, DeliveryClaim{
		Limit: 1, PerEndpoint: w.cfg.PerEndpoint, PerMerchant: w.cfg.PerMerchant, At: now,
		LeaseUntil: now.Add(w.cfg.AttemptTimeout + leaseMargin),
	})
	if err != nil {
		return 0, fmt.Errorf("claim deliveries: %w", err)
	}
	if len(claimed) > 0 {
		// There may be more: one more worker looks while this one sends. A
		// backlog so spreads to every worker, one successful claim at a
		// time, and stops at the first empty one.
		w.loop.Wake()
	}
	for _, c := range claimed {
		if err := w.deliver(ctx, c); err != nil {
			return len(claimed), err
		}
	}
	return len(claimed), nil
}

// deliver makes one attempt of c and records it. The attempt runs on its
// own context: a stop does not cut it at once, only StopGrace later.
func (w *Worker) deliver(ctx context.Context, c Claimed) error {
	secrets, err := w.secrets(c)
	if err != nil {
		w.release(ctx, c)
		return err
	}
	budget := w.budget(c.Timeouts)
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	cut := make(chan struct{})
	stopWatch := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(w.cfg.StopGrace, func() { close(cut); cancel() })
		context.AfterFunc(actx, func() { t.Stop() })
	})
	defer stopWatch()

	at := w.now()
	res := w.sender.Send(actx, Request{URL: c.URL, Headers: Headers(secrets, c.EventID, at, c.Payload), Body: c.Payload})
	took := w.now().Sub(at)
	select {
	case <-cut: // the stop's grace ran out: not the receiver's failure
		w.log.InfoContext(ctx, "webhook attempt cut by the stop; its lease is released", "endpoint_id", c.EndpointID, "event_id", c.EventID)
		w.release(ctx, c)
		return nil
	default:
	}
	f, label := w.judge(c, at, took, budget, res)
	w.metrics.Attempted(label, took)
	switch {
	case res.Failure == FailureRefused:
		w.log.WarnContext(ctx, "webhook attempt refused: the address is not one webhooks may reach", "endpoint_id", c.EndpointID, "event_id", c.EventID, "err", res.Err)
	case res.Err != nil:
		// The whole error, for the operator: the merchant's attempt shows
		// only its category.
		w.log.InfoContext(ctx, "webhook attempt got no answer", "endpoint_id", c.EndpointID, "event_id", c.EventID, "failure", string(res.Failure), "err", res.Err)
	}
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer wcancel()
	held, err := w.store.FinishDelivery(wctx, f)
	if err != nil {
		// The lease passes and the delivery is sent again: at least once.
		return fmt.Errorf("record attempt of event %s to endpoint %s: %w", c.EventID, c.EndpointID, err)
	}
	if !held {
		w.log.WarnContext(ctx, "webhook attempt outlived its lease; recorded, the delivery left to its new holder", "endpoint_id", c.EndpointID, "event_id", c.EventID)
	}
	switch {
	case f.Disable != "" && f.Attempt.Outcome == Gone:
		w.metrics.Disabled("gone")
		w.log.WarnContext(ctx, "webhook endpoint disabled", "endpoint_id", c.EndpointID, "reason", f.Disable)
	case f.Disable != "":
		w.metrics.Disabled("failing")
		w.log.WarnContext(ctx, "webhook endpoint disabled", "endpoint_id", c.EndpointID, "reason", f.Disable)
	case f.Status == DeliveryParked:
		w.log.WarnContext(ctx, "webhook delivery parked: its retry schedule is spent", "endpoint_id", c.EndpointID, "event_id", c.EventID, "attempts", c.Attempts+1)
	}
	return nil
}

// secrets opens the secrets c is signed with: the current one, and the
// previous one while its grace lasts.
func (w *Worker) secrets(c Claimed) ([][]byte, error) {
	cur, err := w.sealer.Open(c.EndpointID, c.Secrets.Current)
	if err != nil {
		return nil, fmt.Errorf("endpoint %s's secret: %w", c.EndpointID, err)
	}
	out := [][]byte{cur}
	if c.Secrets.Previous != nil && w.now().Before(c.Secrets.PreviousExpiresAt) {
		prev, err := w.sealer.Open(c.EndpointID, c.Secrets.Previous)
		if err != nil {
			return nil, fmt.Errorf("endpoint %s's previous secret: %w", c.EndpointID, err)
		}
		out = append(out, prev)
	}
	return out, nil
}

// release gives c's lease back, on a context of its own.
func (w *Worker) release(ctx context.Context, c Claimed) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if err := w.store.ReleaseDelivery(rctx, c.ID, c.LeaseUntil); err != nil {
		w.log.WarnContext(ctx, "webhook delivery lease not released; it passes on its own", "endpoint_id", c.EndpointID, "event_id", c.EventID, "err", err)
	}
}

// budget is how long an attempt to an endpoint with this run of timeouts
// may take: the whole AttemptTimeout while it answers; then half of it
// with each timeout in a row, down to an eighth (at least a second), so
// that an endpoint that never answers holds a worker less and less. At the
// 4th, 8th, 16th… timeout in a row an attempt gets the whole budget again:
// a receiver that is slow rather than gone can answer it and end the run,
// and these probes grow rarer the longer the run lasts.
func (w *Worker) budget(timeouts int) time.Duration {
	full := w.cfg.AttemptTimeout
	if timeouts <= 0 || timeouts >= 4 && timeouts&(timeouts-1) == 0 {
		return full
	}
	return max(full>>min(timeouts, 3), min(full, time.Second))
}

// failureText is what an attempt that got no answer shows the merchant:
// its category, never the error itself, which may name the platform's
// addresses, resolvers and DNS answers.
func failureText(f Failure, budget time.Duration) string {
	switch f {
	case FailureDNS:
		return "dns: the host name did not resolve"
	case FailureRefused:
		return "refused: the host resolved to an address webhooks may not reach"
	case FailureTimeout:
		return fmt.Sprintf("timeout: no answer within %s", budget)
	case FailureTLS:
		return "tls: the TLS handshake failed (certificate or protocol)"
	case FailureConnRefused:
		return "connection refused"
	case FailureConnReset:
		return "connection reset or closed before an answer"
	default:
		return "connection failed before an answer"
	}
}

// judge turns an answer into what to record, and the metric's outcome.
func (w *Worker) judge(c Claimed, at time.Time, took, budget time.Duration, res Response) (Finish, string) {
	a := Attempt{
		ID: newAttemptID(), EndpointID: c.EndpointID, EventID: c.EventID, EventType: c.EventType,
		AttemptedAt: at.UTC().Truncate(time.Microsecond), StatusCode: res.StatusCode, Latency: took,
	}
	f := Finish{DeliveryID: c.ID, LeaseUntil: c.LeaseUntil}
	label := "failed"
	switch {
	case res.Failure == FailureRefused:
		a.Outcome, a.StatusCode, label = Refused, 0, "refused"
		a.Error = failureText(res.Failure, budget)
	case res.Err != nil || res.Failure != "":
		a.Outcome, a.StatusCode = Failed, 0
		a.Error = failureText(res.Failure, budget)
		if res.Failure == FailureTimeout {
			label, f.TimedOut = "timeout", true
		}
	case res.StatusCode >= 200 && res.StatusCode <= 299:
		a.Outcome, label = Delivered, "delivered"
		f.Attempt, f.Status = a, DeliveryDelivered
		return f, label
	case res.StatusCode == 410:
		a.Outcome, label = Gone, "gone"
		a.Error = answered(res)
		f.Attempt, f.Status, f.Disable = a, DeliveryCanceled, "endpoint answered 410 Gone"
		return f, label
	default:
		a.Outcome = Failed
		a.Error = answered(res)
	}
	f.Attempt = a
	if delay, ok := w.sched.Next(c.Attempts + 1); ok {
		f.Status, f.NextAttemptAt = DeliveryPending, at.Add(delay)
	} else {
		f.Status = DeliveryParked
	}
	since := c.FailingSince
	if since.IsZero() {
		since = at
	}
	if at.Sub(since) >= w.cfg.DisableAfter {
		f.Disable = fmt.Sprintf("every attempt failed since %s; the last: %s", since.UTC().Format(time.RFC3339), a.Error)
		if f.Status == DeliveryPending {
			f.Status, f.NextAttemptAt = DeliveryCanceled, time.Time{}
		}
	}
	return f, label
}

// maxExcerpt bounds how much of a receiver's answer an attempt keeps: a
// hint for the merchant, never the whole body.
const maxExcerpt = 200

// answered describes a non-2xx answer: its status and the start of its
// body, as text.
func answered(res Response) string {
	msg := fmt.Sprintf("answered %d", res.StatusCode)
	b := res.Excerpt
	if len(b) > maxExcerpt {
		b = b[:maxExcerpt]
	}
	text := strings.ToValidUTF8(string(b), "")
	for len(text) > 0 && !utf8.ValidString(text) {
		text = text[:len(text)-1]
	}
	text = strings.Join(strings.Fields(text), " ")
	if text != "" {
		msg += ": " + text
	}
	return msg
}

// RefreshGauges reports the deliveries' backlog to the metrics every
// interval until ctx ends: the oldest undelivered, pending and parked
// counts, and the top endpoints by age (a bounded number of series).
func (w *Worker) RefreshGauges(ctx context.Context, every time.Duration, top int) error {
	claimloop.CountEvery(ctx, every, func(ctx context.Context) {
		s, err := w.store.DeliveryStats(ctx, w.now(), top)
		switch {
		case err == nil:
			w.metrics.Backlog(s)
		case ctx.Err() == nil && !errors.Is(err, context.Canceled):
			w.log.WarnContext(ctx, "webhook delivery stats failed", "err", err)
		}
	})
	return nil
}
