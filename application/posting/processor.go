package posting

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/payments-outbox/payments-outbox/application/backlog"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// AppliedTypes returns the event types this version applies, sorted: the
// processor claims only rows of these types, and the rest stay pending for a
// version that knows them.
func AppliedTypes() []string {
	return slices.Sorted(maps.Keys(rules))
}

// ProcessorConfig tunes a Processor. Zero fields take the defaults named on
// each.
type ProcessorConfig struct {
	BatchSize    int           // rows per claim transaction; default 100
	MaxAttempts  int           // failed attempts before a row is parked; default 10
	PollInterval time.Duration // claim at least this often when nothing wakes the processor; default 1s
	// Workers is how many claim loops run at once, each on its own
	// connection. Default 2.
	Workers     int
	BackoffBase time.Duration // delay after the first failure; default 1s
	BackoffMax  time.Duration // ceiling of the delay; default 5m
	// BatchTimeout bounds one batch, also during shutdown, when the batch in
	// hand is allowed to finish. Default 30s.
	BatchTimeout time.Duration
}

func (c ProcessorConfig) withDefaults() ProcessorConfig {
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 10
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.Workers <= 0 {
		c.Workers = 2
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
// (adapters/metrics); nil records nothing.
type ProcessorMetrics interface {
	// Processed counts a committed row: posted, or found already posted under
	// another message id. sinceEvent is the time from the event to its
	// posting; negative when the event had no time.
	Processed(posted bool, sinceEvent time.Duration)
	// Failed counts a failed attempt; parked when it was the row's last.
	Failed(parked bool)
	// Backlog sets the backlog gauges.
	Backlog(InboxStats)
}

type noProcessorMetrics struct{}

func (noProcessorMetrics) Processed(bool, time.Duration) {}
func (noProcessorMetrics) Failed(bool)                   {}
func (noProcessorMetrics) Backlog(InboxStats)            {}

// Processor is the inbox's second half in the async mode, and the replay of
// types learned later in both modes: it claims pending rows of the types
// this version applies and posts each, as the consumer does in the sync
// mode. Any number of processors (workers, replicas, `ledger inbox process`)
// share the inbox: a claim skips the rows another holds.
//
// Each row is applied in a savepoint of its batch's transaction, so a row
// that fails rolls back alone: its error, attempts and next attempt are
// written and the batch commits. A failure only the COMMIT can see (a
// deferred check such as the ledger's balance trigger) fails the whole
// batch; the processor then applies that batch's rows one per transaction, so
// that only the row at fault is charged an attempt and the rows behind it
// are not blocked. A row fails at most MaxAttempts times, then is parked; a
// row that can never apply (its data breaks the schema, or its posting would
// take a balance past int64) is parked at once.
type Processor struct {
	cfg     ProcessorConfig
	backlog Backlog
	schemas Schemas
	log     *slog.Logger
	metrics ProcessorMetrics
	now     func() time.Time
	types   []string
	sched   *backlog.Schedule
	loop    *backlog.Loop
}

// NewProcessor returns a Processor claiming from b and checking each event
// against schemas, as Apply does. metrics may be nil; now is the clock.
func NewProcessor(cfg ProcessorConfig, b Backlog, schemas Schemas, log *slog.Logger, metrics ProcessorMetrics, now func() time.Time) *Processor {
	cfg = cfg.withDefaults()
	if metrics == nil {
		metrics = noProcessorMetrics{}
	}
	p := &Processor{
		cfg: cfg, backlog: b, schemas: schemas, log: log, metrics: metrics, now: now,
		types: AppliedTypes(),
		sched: backlog.NewSchedule(cfg.BackoffBase, cfg.BackoffMax),
	}
	p.loop = backlog.NewLoop(cfg.Workers, cfg.BatchSize, cfg.PollInterval, p.Step, func(ctx context.Context, err error) {
		p.log.WarnContext(ctx, "inbox processor: claim failed; retrying at next poll", "err", err)
	})
	return p
}

// Wake asks an idle worker to claim now instead of at its next poll. It never
// blocks; the consumer calls it after recording a message.
func (p *Processor) Wake() { p.loop.Wake() }

// Run claims and applies until ctx ends, then returns nil. A failed claim (a
// database outage) is logged and tried again at the next poll. On
// cancellation each worker finishes its batch in hand (within BatchTimeout)
// and claims no more; a batch cut short rolls back, its rows pending.
func (p *Processor) Run(ctx context.Context) error { return p.loop.Run(ctx) }

// Step claims one batch, applies it and commits. It returns how many rows it
// claimed. Exported so that tests, benchmarks and `ledger inbox process
// --once` drive the processor one batch at a time.
func (p *Processor) Step(ctx context.Context) (int, error) {
	// ctx only stops the next claim: a batch in hand commits (bounded by
	// BatchTimeout), so a stop does not throw away work already done.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.BatchTimeout)
	defer cancel()
	var (
		claimed []PendingMessage
		res     batchReport
	)
	n, err := p.backlog.ClaimPending(bctx, Claim{Limit: p.cfg.BatchSize, Types: p.types},
		func(ctx context.Context, rows []PendingMessage, apply ApplyFunc) (BatchResult, error) {
			claimed = rows
			res = p.process(ctx, rows, apply)
			return res.out, nil
		})
	switch {
	case err == nil:
		p.report(ctx, res)
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

// stepOne applies row m in a transaction of its own; if that commit fails
// too, it records the failure in another. alone says m was its batch's only
// row, whose commit error batchErr already is.
func (p *Processor) stepOne(ctx context.Context, m PendingMessage, batchErr error, alone bool) error {
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.BatchTimeout)
	defer cancel()
	one := Claim{Limit: 1, Types: p.types, IDs: []string{m.ID}}
	commitErr := batchErr
	if !alone {
		var (
			got bool
			res batchReport
		)
		_, err := p.backlog.ClaimPending(bctx, one, func(ctx context.Context, rows []PendingMessage, apply ApplyFunc) (BatchResult, error) {
			got = true
			res = p.process(ctx, rows, apply)
			return res.out, nil
		})
		switch {
		case err == nil:
			p.report(ctx, res)
			return nil
		case !got:
			return fmt.Errorf("claim inbox message %s: %w", m.ID, err)
		}
		commitErr = err
	}
	var res batchReport
	_, err := p.backlog.ClaimPending(bctx, one, func(_ context.Context, rows []PendingMessage, _ ApplyFunc) (BatchResult, error) {
		res = batchReport{out: BatchResult{At: p.now()}}
		p.fail(&res, rows[0], fmt.Errorf("commit: %w", commitErr))
		return res.out, nil
	})
	if err != nil {
		return fmt.Errorf("record failure of inbox message %s: %w", m.ID, err)
	}
	p.report(ctx, res)
	return nil
}

// batchReport is a batch's outcome plus what to report once it committed.
type batchReport struct {
	out    BatchResult
	posted []bool
	ages   []time.Duration
	types  map[string]string // parked id → event type, for the log
}

// process applies each claimed row in its own savepoint. It decodes every
// row first, then posts them in lock order (lockOrder), so that batches
// committing side by side never wait on each other's balance rows in a
// cycle.
func (p *Processor) process(ctx context.Context, rows []PendingMessage, apply ApplyFunc) batchReport {
	res := batchReport{out: BatchResult{At: p.now()}}
	jobs := make([]job, 0, len(rows))
	for _, m := range rows {
		j, err := p.decode(m)
		if err != nil {
			p.fail(&res, m, err)
			continue
		}
		jobs = append(jobs, j)
	}
	slices.SortStableFunc(jobs, func(a, b job) int { return lockOrder(a.tx, b.tx) })
	for _, j := range jobs {
		posted, age, err := p.post(ctx, j, apply, res.out.At)
		if err != nil {
			p.fail(&res, j.m, err)
			continue
		}
		note := ""
		if !posted {
			note = noteAlreadyPosted
		}
		res.out.Processed = append(res.out.Processed, Processed{ID: j.m.ID, Note: note})
		res.posted = append(res.posted, posted)
		res.ages = append(res.ages, age)
	}
	return res
}

// job is a claimed row decoded into the transaction it posts.
type job struct {
	m   PendingMessage
	env envelope
	tx  ledger.Transaction
}

// decode turns a claimed row into the transaction it posts, checked as
// Apply checks it.
func (p *Processor) decode(m PendingMessage) (job, error) {
	env, err := decodeEnvelope(m.Payload)
	if err != nil {
		return job{}, err
	}
	r, ok := rules[m.Type]
	if !ok || env.typ != m.Type {
		return job{}, fmt.Errorf("%w: row of type %q holds an event of type %q", ErrInvalidEvent, m.Type, env.typ)
	}
	tx, err := env.transaction(r, p.schemas)
	if err != nil {
		return job{}, err
	}
	return job{m: m, env: env, tx: tx}, nil
}

// lockOrder orders a batch's postings by the balance rows they lock. The
// database adds a transaction's postings to their balances at commit, in the
// order they were posted, each posting's merchant row before its payer's;
// posted by merchant, then currency, then payer, every commit — a batch's,
// or a single posting's in the sync mode — takes the rows it shares with
// another in the same order, and none waits for another that waits for it.
func lockOrder(a, b ledger.Transaction) int {
	ka, kb := lockKey(a), lockKey(b)
	return cmp.Or(cmp.Compare(ka[0], kb[0]), cmp.Compare(ka[1], kb[1]), cmp.Compare(ka[2], kb[2]))
}

// lockKey is (merchant, currency, payer) of a transfer's accounts.
func lockKey(tx ledger.Transaction) [3]string {
	var k [3]string
	k[1] = tx.Currency()
	for _, e := range tx.Entries() {
		k[0] = e.Account().Merchant()
		if payer := e.Account().Payer(); payer != "" {
			k[2] = payer
		}
	}
	return k
}

// post posts one decoded row's transaction. It reports whether the row
// posted (false: its business key was already posted) and the event's age
// (-1 if none).
func (p *Processor) post(ctx context.Context, j job, apply ApplyFunc, now time.Time) (bool, time.Duration, error) {
	var posted bool
	err := apply(ctx, func(repos Repos) error {
		var err error
		posted, err = repos.Ledger.Post(ctx, j.tx, now)
		return err
	})
	if err != nil {
		return false, 0, err
	}
	age := time.Duration(-1)
	if !j.env.time.IsZero() {
		age = max(0, now.Sub(j.env.time))
	}
	return posted, age, nil
}

// fail schedules m's next attempt, or parks it: after MaxAttempts, or at
// once when it can never apply (retrying would only repeat the refusal): its
// event is malformed or invalid, or its posting would take a balance past
// what int64 holds.
func (p *Processor) fail(res *batchReport, m PendingMessage, err error) {
	f := Failure{ID: m.ID, Error: err.Error(), Attempts: m.Attempts + 1}
	permanent := errors.Is(err, ErrMalformed) || errors.Is(err, ErrInvalidEvent) || errors.Is(err, ledger.ErrBalanceLimit)
	if permanent || f.Attempts >= p.cfg.MaxAttempts {
		res.out.Parked = append(res.out.Parked, f)
		if res.types == nil {
			res.types = map[string]string{}
		}
		res.types[m.ID] = m.Type
		return
	}
	f.NextAttemptAt = res.out.At.Add(p.sched.Delay(f.Attempts))
	res.out.Retry = append(res.out.Retry, f)
}

// report counts and logs a committed batch.
func (p *Processor) report(ctx context.Context, res batchReport) {
	for i := range res.out.Processed {
		p.metrics.Processed(res.posted[i], res.ages[i])
	}
	for range res.out.Retry {
		p.metrics.Failed(false)
	}
	if len(res.out.Retry) > 0 {
		// One line per batch, not per row: an outage fails every row.
		p.log.WarnContext(ctx, "inbox messages not applied; will retry with backoff",
			"failed", len(res.out.Retry), "first_id", res.out.Retry[0].ID, "first_err", res.out.Retry[0].Error)
	}
	for _, f := range res.out.Parked {
		p.metrics.Failed(true)
		p.log.ErrorContext(ctx, "inbox message parked; `ledger inbox retry` applies it again once the cause is fixed",
			"id", f.ID, "type", res.types[f.ID], "attempts", f.Attempts, "err", f.Error)
	}
}

// RefreshGauges reports the inbox's backlog to the processor's metrics every
// interval until ctx ends. Every replica reports the whole table's backlog:
// the gauges come from the table, not from this process. The wait grows with
// the time a count takes (backlog.StatsWait).
func (p *Processor) RefreshGauges(ctx context.Context, admin InboxAdmin, every time.Duration) error {
	backlog.CountEvery(ctx, every, func(ctx context.Context) {
		s, err := admin.InboxStats(ctx, p.types)
		switch {
		case err == nil:
			p.metrics.Backlog(s)
		case ctx.Err() == nil:
			p.log.WarnContext(ctx, "inbox stats failed", "err", err)
		}
	})
	return nil
}
