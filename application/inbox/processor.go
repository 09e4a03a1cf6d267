package inbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/payments-outbox/payments-outbox/application/claimloop"
)

// The defaults of the ProcessorConfig fields a deployment sets (the
// consumers' cmd passes them as their variables' defaults): each stated here
// once.
const (
	DefaultBatchSize    = 100
	DefaultMaxAttempts  = 10
	DefaultPollInterval = time.Second
	DefaultWorkers      = 2
)

// ProcessorConfig tunes a Processor. Zero fields take the defaults named on
// each.
type ProcessorConfig struct {
	BatchSize    int           // rows per claim transaction; DefaultBatchSize
	MaxAttempts  int           // failed attempts before a row is parked; DefaultMaxAttempts
	PollInterval time.Duration // claim at least this often when nothing wakes the processor; DefaultPollInterval
	// Workers is how many claim loops run at once, each on its own
	// connection. DefaultWorkers.
	Workers     int
	BackoffBase time.Duration // delay after the first failure; default 1s
	BackoffMax  time.Duration // ceiling of the delay; default 5m
	// BatchTimeout bounds one batch, also during shutdown, when the batch in
	// hand is allowed to finish. Default 30s.
	BatchTimeout time.Duration
	// OnApplied, when not nil, is called once for each row a batch applied,
	// after the batch committed: what applying it wrote is visible to other
	// transactions from then on, so a service that works from those writes
	// wakes its workers here (the webhooks service's delivery workers). It
	// runs on the processor's goroutine and must not block.
	OnApplied func()
}

func (c ProcessorConfig) withDefaults() ProcessorConfig {
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 5 * time.Minute
	}
	if c.BatchTimeout <= 0 {
		c.BatchTimeout = 30 * time.Second
	}
	return c
}

// ProcessorMetrics is what the processor reports. The binary exports it
// (adapters/metrics); nil records nothing. Metrics only count: what must
// happen after a commit is ProcessorConfig.OnApplied.
type ProcessorMetrics interface {
	// Processed counts a committed row: applied, or found already applied
	// under another message id. sinceEvent is the time from the event to
	// its application; negative when the event had no time.
	Processed(applied bool, sinceEvent time.Duration)
	// Failed counts a failed attempt; parked when it was the row's last.
	Failed(parked bool)
	// Backlog sets the backlog gauges.
	Backlog(Stats)
}

type noProcessorMetrics struct{}

func (noProcessorMetrics) Processed(bool, time.Duration) {}
func (noProcessorMetrics) Failed(bool)                   {}
func (noProcessorMetrics) Backlog(Stats)                 {}

// Processor is the inbox's second half in the async mode, and the replay of
// types learned later in both modes: it claims pending rows of the types its
// handler applies and applies each, checked and applied as the sync path
// (Inbox) checks and applies a message.
// Any number of processors (workers, replicas, a service's `inbox process`)
// share the inbox: a claim skips the rows another holds.
//
// Each row is applied in a savepoint of its batch's transaction, so a row
// that fails rolls back alone: its error, attempts and next attempt are
// written and the batch commits. A failure only the COMMIT can see (a
// deferred check such as the ledger's balance trigger) fails the whole
// batch; the processor then applies that batch's rows one per transaction, so
// that only the row at fault is charged an attempt and the rows behind it
// are not blocked. A row fails at most MaxAttempts times, then is parked; a
// row that can never apply (its data breaks the schema, or the database
// refuses its writes for good: ErrPermanent) is parked at once.
type Processor[R, E any] struct {
	cfg     ProcessorConfig
	backlog Backlog[R]
	c       *checker[R, E]
	log     *slog.Logger
	metrics ProcessorMetrics
	now     func() time.Time
	sched   *claimloop.Schedule
	loop    *claimloop.Loop
}

// NewProcessor returns a Processor claiming from b and applying with h, each
// event checked against schemas as the sync path checks it. metrics may be
// nil; now is the clock.
func NewProcessor[R, E any](b Backlog[R], h Handler[R, E], schemas Schemas, log *slog.Logger, metrics ProcessorMetrics, now func() time.Time, cfg ProcessorConfig) *Processor[R, E] {
	cfg = cfg.withDefaults()
	if metrics == nil {
		metrics = noProcessorMetrics{}
	}
	p := &Processor[R, E]{
		cfg: cfg, backlog: b, c: newChecker(h, schemas), log: log, metrics: metrics, now: now,
		sched: claimloop.NewSchedule(cfg.BackoffBase, cfg.BackoffMax),
	}
	p.loop = claimloop.New(claimloop.Whole(p.Step), func(ctx context.Context, err error) {
		p.log.WarnContext(ctx, "inbox processor: claim failed; retrying at next poll", "err", err)
	}, claimloop.Config{Workers: cfg.Workers, BatchSize: cfg.BatchSize, PollInterval: cfg.PollInterval})
	return p
}

// Types returns the event types the processor applies, sorted: it claims
// only rows of these types, and the rest stay pending for a version that
// knows them.
func (p *Processor[R, E]) Types() []string { return slices.Clone(p.c.types) }

// Wake asks an idle worker to claim now instead of at its next poll. It never
// blocks; the async mode's receive calls it after recording a message.
func (p *Processor[R, E]) Wake() { p.loop.Wake() }

// Run claims and applies until ctx ends, then returns nil. A failed claim (a
// database outage) is logged and tried again at the next poll. On
// cancellation each worker finishes its batch in hand (within BatchTimeout)
// and claims no more; a batch cut short rolls back, its rows pending.
func (p *Processor[R, E]) Run(ctx context.Context) error { return p.loop.Run(ctx) }

// Step claims one batch, applies it and commits. It returns how many rows it
// claimed. Exported so that tests and benchmarks drive the processor one
// batch at a time.
func (p *Processor[R, E]) Step(ctx context.Context) (int, error) {
	// ctx only stops the next claim: a batch in hand commits (bounded by
	// BatchTimeout), so a stop does not throw away work already done.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.BatchTimeout)
	defer cancel()
	var (
		claimed []PendingMessage
		rep     batchReport
	)
	n, err := p.backlog.ClaimPending(bctx, Claim{Limit: p.cfg.BatchSize, Types: p.c.types},
		func(ctx context.Context, rows []PendingMessage, apply ApplyFunc[R]) (BatchResult, error) {
			claimed = rows
			rep = p.process(ctx, rows, apply)
			return rep.out, nil
		})
	switch {
	case err == nil:
		p.report(ctx, rep)
		return n, nil
	case len(claimed) == 0 || ctx.Err() != nil:
		return n, fmt.Errorf("claim inbox batch: %w", err)
	}
	// The batch was claimed and applied, and its commit failed: most likely
	// a check deferred to COMMIT refused one row's writes. Retrying the batch
	// as a whole would fail the same way forever, so apply its rows one per
	// transaction: the good ones commit, the bad one alone gets the error.
	p.log.WarnContext(ctx, "inbox batch failed at commit; applying its rows one per transaction", "rows", len(claimed), "err", err)
	for _, m := range claimed {
		if ctx.Err() != nil {
			break
		}
		if err := p.stepOne(ctx, m, err, len(claimed) == 1); err != nil {
			return n, err
		}
	}
	return n, nil
}

// Drain steps until a claim finds nothing due or ctx ends, and returns how
// many rows it claimed in all: one pass over what is due now, for a
// service's `inbox process --once`.
func (p *Processor[R, E]) Drain(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := p.Step(ctx)
		if err != nil {
			return total, err
		}
		total += n
		if n == 0 || ctx.Err() != nil {
			return total, nil
		}
	}
}

// stepOne applies row m in a transaction of its own; if that commit fails
// too, it records the failure in another. alone says m was its batch's only
// row, whose commit error batchErr already is.
func (p *Processor[R, E]) stepOne(ctx context.Context, m PendingMessage, batchErr error, alone bool) error {
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.BatchTimeout)
	defer cancel()
	one := Claim{Limit: 1, Types: p.c.types, IDs: []string{m.ID}}
	commitErr := batchErr
	if !alone {
		var (
			got bool
			rep batchReport
		)
		_, err := p.backlog.ClaimPending(bctx, one, func(ctx context.Context, rows []PendingMessage, apply ApplyFunc[R]) (BatchResult, error) {
			got = true
			rep = p.process(ctx, rows, apply)
			return rep.out, nil
		})
		switch {
		case err == nil:
			p.report(ctx, rep)
			return nil
		case !got:
			return fmt.Errorf("claim inbox message %s: %w", m.ID, err)
		}
		commitErr = err
	}
	var rep batchReport
	_, err := p.backlog.ClaimPending(bctx, one, func(_ context.Context, rows []PendingMessage, _ ApplyFunc[R]) (BatchResult, error) {
		rep = batchReport{out: BatchResult{At: p.now()}}
		p.fail(&rep, rows[0], fmt.Errorf("commit: %w", commitErr))
		return rep.out, nil
	})
	if err != nil {
		return fmt.Errorf("record failure of inbox message %s: %w", m.ID, err)
	}
	p.report(ctx, rep)
	return nil
}

// batchReport is a batch's result plus what to report once it committed.
type batchReport struct {
	out     BatchResult
	applied []bool
	ages    []time.Duration
	types   map[string]string // parked id → event type, for the log
}

// job is a claimed row decoded and checked into what its handler applies.
type job[E any] struct {
	m  PendingMessage
	ev Event
	e  E
}

// process applies each claimed row in its own savepoint. It checks every
// row first, then applies them in the handler's order (Handler.Compare), so
// that batches committing side by side never wait on each other's rows in a
// cycle.
func (p *Processor[R, E]) process(ctx context.Context, rows []PendingMessage, apply ApplyFunc[R]) batchReport {
	rep := batchReport{out: BatchResult{At: p.now()}}
	jobs := make([]job[E], 0, len(rows))
	for _, m := range rows {
		j, err := p.check(m)
		if err != nil {
			p.fail(&rep, m, err)
			continue
		}
		jobs = append(jobs, j)
	}
	slices.SortStableFunc(jobs, func(a, b job[E]) int { return p.c.h.Compare(a.e, b.e) })
	for _, j := range jobs {
		applied, age, err := p.apply(ctx, j, apply, rep.out.At)
		if err != nil {
			p.fail(&rep, j.m, err)
			continue
		}
		note := ""
		if !applied {
			note = noteAlreadyApplied
		}
		rep.out.Processed = append(rep.out.Processed, Processed{ID: j.m.ID, Note: note})
		rep.applied = append(rep.applied, applied)
		rep.ages = append(rep.ages, age)
	}
	return rep
}

// check decodes a claimed row and checks it as the sync path checks a
// message.
func (p *Processor[R, E]) check(m PendingMessage) (job[E], error) {
	ev, err := Decode(m.Payload)
	if err != nil {
		return job[E]{}, err
	}
	if ev.Type != m.Type {
		return job[E]{}, fmt.Errorf("%w: row of type %q holds an event of type %q", ErrInvalidEvent, m.Type, ev.Type)
	}
	e, err := p.c.check(ev)
	if err != nil {
		return job[E]{}, err
	}
	return job[E]{m: m, ev: ev, e: e}, nil
}

// apply applies one checked row in its savepoint. It reports whether the row
// applied (false: its business key was already applied) and the event's age
// (-1 if none).
func (p *Processor[R, E]) apply(ctx context.Context, j job[E], apply ApplyFunc[R], now time.Time) (bool, time.Duration, error) {
	var applied bool
	err := apply(ctx, j.ev, func(ctx context.Context, repos R) error {
		var err error
		applied, err = p.c.h.Apply(ctx, repos, j.e, now)
		return err
	})
	if err != nil {
		return false, 0, err
	}
	age := time.Duration(-1)
	if !j.ev.Time.IsZero() {
		age = max(0, now.Sub(j.ev.Time))
	}
	return applied, age, nil
}

// fail schedules m's next attempt, or parks it: after MaxAttempts, or at
// once when it can never apply (retrying would only repeat the refusal): its
// event is malformed or invalid, or the database refused its writes for
// good.
func (p *Processor[R, E]) fail(rep *batchReport, m PendingMessage, err error) {
	f := Failure{ID: m.ID, Error: err.Error(), Attempts: m.Attempts + 1}
	permanent := errors.Is(err, ErrMalformed) || errors.Is(err, ErrInvalidEvent) || errors.Is(err, ErrPermanent)
	if permanent || f.Attempts >= p.cfg.MaxAttempts {
		rep.out.Parked = append(rep.out.Parked, f)
		if rep.types == nil {
			rep.types = map[string]string{}
		}
		rep.types[m.ID] = m.Type
		return
	}
	f.NextAttemptAt = rep.out.At.Add(p.sched.Delay(f.Attempts))
	rep.out.Retry = append(rep.out.Retry, f)
}

// report counts and logs a committed batch, and calls OnApplied for each
// row it applied.
func (p *Processor[R, E]) report(ctx context.Context, rep batchReport) {
	for i := range rep.out.Processed {
		p.metrics.Processed(rep.applied[i], rep.ages[i])
		if rep.applied[i] && p.cfg.OnApplied != nil {
			p.cfg.OnApplied()
		}
	}
	for range rep.out.Retry {
		p.metrics.Failed(false)
	}
	if len(rep.out.Retry) > 0 {
		// One line per batch, not per row: an outage fails every row.
		p.log.WarnContext(ctx, "inbox messages not applied; will retry with backoff",
			"failed", len(rep.out.Retry), "first_id", rep.out.Retry[0].ID, "first_err", rep.out.Retry[0].Error)
	}
	for _, f := range rep.out.Parked {
		p.metrics.Failed(true)
		p.log.ErrorContext(ctx, "inbox message parked; the service's `inbox retry` command applies it again once the cause is fixed",
			"id", f.ID, "type", rep.types[f.ID], "attempts", f.Attempts, "err", f.Error)
	}
}

// RefreshGauges reports the inbox's backlog to the processor's metrics every
// interval until ctx ends. Every replica reports the whole table's backlog:
// the gauges come from the table, not from this process. The wait grows with
// the time a count takes (claimloop.StatsWait).
func (p *Processor[R, E]) RefreshGauges(ctx context.Context, admin Admin, every time.Duration) error {
	claimloop.CountEvery(ctx, every, func(ctx context.Context) {
		s, err := admin.InboxStats(ctx, p.c.types)
		switch {
		case err == nil:
			p.metrics.Backlog(s)
		case ctx.Err() == nil:
			p.log.WarnContext(ctx, "inbox stats failed", "err", err)
		}
	})
	return nil
}
