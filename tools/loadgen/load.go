package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// op is one unit of load: a request, a transaction. It returns an error for
// anything but success.
type op func(ctx context.Context, worker int, seq uint64) error

// phase is one timed measurement.
type phase struct {
	Name        string
	Concurrency int
	Warmup      time.Duration // run, but not recorded: connections, caches, plans
	Duration    time.Duration
	// Rate, when positive, paces the whole phase at that many operations per
	// second (an open loop, for latency at a given load) instead of running
	// every worker flat out (a closed loop, for throughput).
	Rate     float64
	Progress io.Writer
}

// run runs op on Concurrency workers (each as fast as it can, or paced) and
// summarises the operations that started inside the measured window.
func (p phase) run(ctx context.Context, fn op) summary {
	var (
		recording atomic.Bool
		done      atomic.Int64 // operations in the current progress second
		failed    atomic.Int64
		firstErr  atomic.Value
		seq       atomic.Uint64
		all       atomic.Int64 // every finished operation, warm-up included
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var tickets chan struct{}
	if p.Rate > 0 {
		tickets = make(chan struct{}, p.Concurrency)
		go pace(ctx, p.Rate, tickets)
	}
	parts := make([]latencies, p.Concurrency)
	cpu := selfCPU()
	var wg sync.WaitGroup
	for w := range p.Concurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				if tickets != nil {
					select {
					case <-ctx.Done():
						return
					case <-tickets:
					}
				}
				rec := recording.Load()
				start := time.Now()
				err := fn(ctx, w, seq.Add(1))
				if ctx.Err() != nil {
					return // cut off by the end of the phase: neither success nor error
				}
				all.Add(1)
				if !rec {
					continue
				}
				if err != nil {
					if failed.Add(1) == 1 {
						firstErr.Store(err.Error())
					}
					continue
				}
				parts[w] = append(parts[w], time.Since(start))
				done.Add(1)
			}
		})
	}

	fmt.Fprintf(p.Progress, "  %s: warming up %s\n", p.Name, p.Warmup)
	sleep(ctx, p.Warmup)
	recording.Store(true)
	start := time.Now()
	tick := time.NewTicker(time.Second)
	var total int64
	for end := start.Add(p.Duration); time.Now().Before(end); {
		select {
		case <-ctx.Done():
		case <-tick.C:
		case <-time.After(time.Until(end)):
		}
		if ctx.Err() != nil {
			break
		}
		n := done.Swap(0)
		total += n
		fmt.Fprintf(p.Progress, "  %s: %4.0fs  %6d ok  %7.0f/s  %d errors\n",
			p.Name, time.Since(start).Seconds(), total, float64(total)/time.Since(start).Seconds(), failed.Load())
	}
	tick.Stop()
	recording.Store(false)
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		fmt.Fprintf(p.Progress, "  %s: first error: %s\n", p.Name, e)
	}
	s := summarize(merge(parts), int(failed.Load()), elapsed)
	s.All = int(all.Load())
	if used := selfCPU() - cpu; used > 0 && s.All > 0 {
		s.ClientCPU = used / time.Duration(s.All)
		fmt.Fprintf(p.Progress, "  %s: loadgen itself used %s of CPU per operation\n", p.Name, s.ClientCPU.Round(100*time.Nanosecond))
	}
	return s
}

// pace hands out rate tickets per second, evenly spaced. A ticket nobody
// takes in time is dropped rather than queued, so a stalled server is not
// hit by a burst afterwards.
func pace(ctx context.Context, rate float64, tickets chan<- struct{}) {
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			select {
			case tickets <- struct{}{}:
			default:
			}
		}
	}
}

// selfCPU is the user+system CPU time this process has used so far; zero
// where getrusage is unavailable.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// paymentClient POSTs payments to one service, each worker over its own
// kept-alive connection. Payers and merchants vary so the load does not pile
// onto one account downstream.
type paymentClient struct {
	posters []*poster
}

func newPaymentClient(baseURL, key string, workers int) (*paymentClient, error) {
	c := &paymentClient{posters: make([]*poster, workers)}
	for i := range c.posters {
		p, err := newPoster(baseURL+"/payments", key)
		if err != nil {
			return nil, err
		}
		c.posters[i] = p
	}
	return c, nil
}

// create is the op: one POST /payments, which must answer 201.
func (c *paymentClient) create(_ context.Context, worker int, seq uint64) error {
	status, err := c.posters[worker].post(paymentBody(seq))
	if err != nil {
		return err
	}
	if status != http.StatusCreated {
		return fmt.Errorf("POST /payments: %d %s", status, http.StatusText(status))
	}
	return nil
}

// Close closes the workers' connections.
func (c *paymentClient) Close() {
	for _, p := range c.posters {
		p.close()
	}
}

func paymentBody(seq uint64) []byte {
	b := make([]byte, 0, 128)
	b = append(b, `{"amount":`...)
	b = strconv.AppendUint(b, 100+seq%100_000, 10)
	b = append(b, `,"currency":"BRL","payer_id":"cus_`...)
	b = strconv.AppendUint(b, seq%1000, 10)
	b = append(b, `","merchant_id":"mer_`...)
	b = strconv.AppendUint(b, seq%50, 10)
	b = append(b, `","description":"loadgen"}`...)
	return b
}

// rawWrite returns the op for the ceiling: what POST /payments commits — a
// payments row and its outbox row, in one transaction — sent straight to
// Postgres with pgx, with no HTTP, JSON decoding or idempotency key. It is
// sent the fastest way pgx knows, as one pipelined batch in an implicit
// transaction: one round trip, prepared statements. With notify, the batch
// also sends a NOTIFY inside the transaction, for comparison with the
// service's paymentstore.Notifier, which sends one after the commits.
//
// The SQL is written out here, not called through paymentstore.Repository, on
// purpose: the ceiling is the database's price of the write, the figure the
// API's throughput is divided by, and a cost added to the repository would
// lower the ceiling with the API and hide in the ratio. The values come from
// the project all the same (newWrite), so the rows are the service's and the
// ceiling pays what the service pays to build them; and
// TestRawWriteAndBacklogFitTheSchema runs these statements on freshly
// migrated tables, so a schema change fails a test, not a benchmark night.
func rawWrite(pool *pgxpool.Pool, notify bool) op {
	return func(ctx context.Context, worker int, seq uint64) error {
		w, err := newWrite(seq, time.Now())
		if err != nil {
			return err
		}
		s := w.payment
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO payments (id, amount, amount_captured, refunded_amount, currency, status, payer_id, merchant_id, description, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			string(s.ID), s.AmountMinor, s.CapturedMinor, s.RefundedMinor, s.Currency, string(s.Status), s.PayerID, s.MerchantID, s.Description, s.CreatedAt, s.UpdatedAt)
		b.Queue(`INSERT INTO outbox (id, type, aggregate_id, payload) VALUES ($1, $2, $3, $4)`,
			w.outboxRow()...)
		if notify {
			b.Queue(`SELECT pg_notify($1, '')`, postgres.OutboxChannel)
		}
		return pool.SendBatch(ctx, b).Close()
	}
}

// write is what the service commits for one new payment: the payment's
// columns and the outbox row of its Created event.
type write struct {
	payment payment.Snapshot
	msgID   uuid.UUID
	event   payment.Event
	payload []byte // the CloudEvents document, as published
}

// newWrite builds the write of the seq-th operation — the payment paymentBody
// asks for — with the project's code, as the service does: payment.New
// records the Created event and payments.EncodeEvent renders it.
func newWrite(seq uint64, now time.Time) (write, error) {
	payer, merchant := "cus_"+strconv.FormatUint(seq%1000, 10), "mer_"+strconv.FormatUint(seq%50, 10)
	p, err := payment.New(payment.ID(uuid.Must(uuid.NewV7()).String()), int64(100+seq%100_000), "BRL", payer, merchant, "loadgen", now)
	if err != nil {
		return write{}, err
	}
	w := write{payment: p.Snapshot(), msgID: uuid.Must(uuid.NewV7()), event: p.PullEvents()[0]}
	if w.payload, err = payments.EncodeEvent(w.msgID.String(), w.event, payments.TraceContext{}); err != nil {
		return write{}, err
	}
	return w, nil
}

// outboxRow is the values of the outbox columns id, type, aggregate_id and
// payload, typed as pgx encodes them fastest (see paymentstore).
func (w write) outboxRow() []any {
	return []any{pgtype.UUID{Bytes: w.msgID, Valid: true}, w.event.EventType(), string(w.event.AggregateID()), w.payload}
}
