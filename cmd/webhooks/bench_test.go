package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
	"github.com/payments-outbox/payments-outbox/adapters/metrics"
	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/webhookstore"
	"github.com/payments-outbox/payments-outbox/adapters/webhooksender"
	"github.com/payments-outbox/payments-outbox/adapters/webhooksmetrics"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
	"github.com/payments-outbox/payments-outbox/cmd/internal/lifecycle"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// BenchmarkCommitToDelivery measures the latency from an event's inbox
// commit to its arrival at the merchant's receiver, at a steady rate: the
// events are received in-process (inbox.Service.Receive in the async mode,
// what the SQS consumer calls; no broker), and the inbox processor and the
// delivery workers run as serve wires them, with the default configuration,
// against Postgres and a local receiver answering 204 at once. Twenty
// merchants, one endpoint each, so the per-endpoint cap does not bind.
// It also reports the CPU and the claims per delivery (cpuCost.report): at
// a low rate, the cost of the workers' wake-ups. docs/BENCHMARKS.md
// records the figures.
//
//	go test -run '^$' -bench CommitToDelivery -benchtime 2000x ./cmd/webhooks/
func BenchmarkCommitToDelivery(b *testing.B) {
	for _, rate := range []int{100, 200, 1000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			st := newBenchStack(b, nil, nil)
			merchants := st.endpoints(b, 20, "/hook")
			events := st.events(b.N, merchants)
			st.start(b)
			cost := st.measureCPU()
			b.ResetTimer()
			st.receiveAt(b, events, rate)
			st.rcv.wait(b, events.ids(), 2*time.Minute)
			b.StopTimer()
			st.reportLatency(b, events)
			cost.report(b)
		})
	}
}

// BenchmarkDeliveries measures how many deliveries a process makes per
// second to a receiver that answers 204 at once, and the CPU they cost:
// b.N events received in-process by two goroutines (the SQS consumer's
// default loops) as fast as the inbox takes them, fanned out and
// delivered, the clock stopping at the last arrival. cpu_us/delivery is
// the process's CPU time (getrusage) per delivery, and includes the test
// receiver's, a Go HTTP server on loopback in the same process (path=http
// measures that exchange alone: the sender POSTing signed requests to the
// receiver from 16 goroutines, nothing else); pg_cpu_us/delivery is that
// of the database's backends, when Postgres runs on this machine.
// endpoints=1 puts every event on one endpoint, where the per-endpoint cap
// (4 in flight) binds; idle=2000 adds that many endpoints of merchants
// that get no events, which every claim still looks at.
//
//	go test -run '^$' -bench 'Deliveries$' -benchtime 3000x ./cmd/webhooks/
func BenchmarkDeliveries(b *testing.B) {
	for _, c := range []struct {
		path            string
		endpoints, idle int
	}{{"service", 20, 0}, {"service", 1, 0}, {"service", 20, 2000}, {"http", 20, 0}} {
		b.Run(fmt.Sprintf("path=%s/endpoints=%d/idle=%d", c.path, c.endpoints, c.idle), func(b *testing.B) {
			st := newBenchStack(b, nil, nil)
			merchants := st.endpoints(b, c.endpoints, "/hook")
			for i := range c.idle {
				st.endpoint(b, fmt.Sprintf("mer_idle_%d", i), "/hook")
			}
			events := st.events(b.N, merchants)
			if c.path == "http" {
				cpu0 := processCPU()
				b.ResetTimer()
				st.postAll(b, events)
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
				b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu_us/delivery")
				return
			}
			st.start(b)
			cost := st.measureCPU()
			b.ResetTimer()
			st.receiveAt(b, events, 0)
			st.rcv.wait(b, events.ids(), 5*time.Minute)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
			cost.report(b)
		})
	}
}

// postAll sends every event to the receiver with the service's sender,
// signed, from as many goroutines as there are delivery workers: the HTTP
// exchange of a delivery without its database work.
func (st *benchStack) postAll(b *testing.B, events benchEvents) {
	sender := webhooksender.New(webhooksender.Config{AllowPrivateTargets: true})
	secret := [][]byte{[]byte("0123456789abcdef0123456789abcdef")}
	var g errgroup.Group
	g.SetLimit(st.cfg.DeliveryWorkers)
	for _, e := range events {
		g.Go(func() error {
			res := sender.Send(context.Background(), webhooks.Request{URL: st.rcv.srv.URL + "/hook", Headers: webhooks.Headers(secret, e.id, time.Now(), e.body), Body: e.body})
			if res.Err != nil || res.StatusCode != http.StatusNoContent {
				return fmt.Errorf("event %s: %d, %v", e.id, res.StatusCode, res.Err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSlowEndpoint measures what one endpoint that never answers
// costs the others: healthy endpoints, one merchant each, and a ninth
// merchant whose endpoint sleeps past WEBHOOKS_ATTEMPT_TIMEOUT (1s here,
// so the run is short), at a steady 100 events/s spread evenly over the
// nine merchants. The latency reported is the healthy endpoints' commit
// to arrival. slow=0 gives the ninth merchant no endpoint (its events are
// still recorded and fanned out, to nothing); cap is
// WEBHOOKS_ENDPOINT_CONCURRENCY, the default 4, and 16, every delivery
// worker, which is what no cap would be.
//
//	go test -run '^$' -bench SlowEndpoint -benchtime 1500x ./cmd/webhooks/
func BenchmarkSlowEndpoint(b *testing.B) {
	const healthy, rate = 8, 100
	for _, c := range []struct{ slow, cap int }{{0, 4}, {1, 4}, {1, 16}} {
		b.Run(fmt.Sprintf("slow=%d/cap=%d", c.slow, c.cap), func(b *testing.B) {
			st := newBenchStack(b, map[string]string{
				"WEBHOOKS_ATTEMPT_TIMEOUT": "1s", "WEBHOOKS_ENDPOINT_CONCURRENCY": strconv.Itoa(c.cap),
			}, nil)
			merchants := st.endpoints(b, healthy, "/hook")
			slowMerchant := "mer_slow"
			if c.slow > 0 {
				st.endpoint(b, slowMerchant, "/slow")
			}
			events := st.events(b.N, append(slices.Clone(merchants), slowMerchant))
			st.start(b)
			b.ResetTimer()
			st.receiveAt(b, events, rate)
			var healthyIDs []string
			for _, e := range events {
				if e.merchant != slowMerchant {
					healthyIDs = append(healthyIDs, e.id)
				}
			}
			st.rcv.wait(b, healthyIDs, 5*time.Minute)
			b.StopTimer()
			var ok benchEvents
			for _, e := range events {
				if e.merchant != slowMerchant {
					ok = append(ok, e)
				}
			}
			st.reportLatency(b, ok)
			b.ReportMetric(float64(st.rcv.slowCalls()), "slow_attempts")
		})
	}
}

// BenchmarkTarpit measures what a merchant that attacks the delivery
// workers costs another merchant: a tarpit merchant with 40 endpoints whose
// receiver never answers (each attempt waits out its whole budget), an
// event of its own a second fanned out to all 40, and its deliveries
// redelivered 32 times a second (what an API key might ask under its rate
// limit), beside a healthy merchant's one endpoint, with the default
// configuration (16 delivery workers, 8 a merchant, 4 an endpoint, 15 s
// attempts). The latency reported is the healthy merchant's commit →
// arrival, at a steady 10 events a second; baseline is the healthy merchant
// alone. share=16 is WEBHOOKS_MERCHANT_CONCURRENCY at every worker, what no
// share would be.
//
//	go test -run '^$' -bench Tarpit -benchtime 300x ./cmd/webhooks/
func BenchmarkTarpit(b *testing.B) {
	const tarpits, rate, redeliveries = 40, 10, 32
	for _, c := range []struct {
		name   string
		attack bool
		share  int
	}{{"baseline", false, 8}, {"tarpit/share=8", true, 8}, {"tarpit/share=16", true, 16}} {
		b.Run(c.name, func(b *testing.B) {
			st := newBenchStack(b, map[string]string{
				"WEBHOOKS_MERCHANT_CONCURRENCY": strconv.Itoa(c.share), "WEBHOOKS_MAX_ENDPOINTS": strconv.Itoa(tarpits),
				// A short stop: the attempts still in the tarpit at the end
				// are cut after SHUTDOWN_TIMEOUT.
				"WEBHOOKS_WAIT_TIME": "1s", "SHUTDOWN_TIMEOUT": "6s",
			}, nil)
			healthy := st.endpoints(b, 1, "/hook")[0]
			var merchants []string
			for range rate {
				merchants = append(merchants, healthy)
			}
			var tarpitEndpoints []string
			if c.attack {
				for range tarpits {
					e, err := st.svc.Create(context.Background(), webhooks.CreateEndpoint{Principal: platform, MerchantID: "mer_tarpit",
						URL: st.rcv.srv.URL + "/slow", EnabledEvents: []string{webhooks.AllEvents}})
					if err != nil {
						b.Fatal(err)
					}
					tarpitEndpoints = append(tarpitEndpoints, e.Endpoint.ID)
				}
				merchants = append(merchants, "mer_tarpit")
			}
			// b.N of the healthy merchant's events, and one of the tarpit
			// merchant's after every rate of them when it attacks.
			events := st.events(b.N*len(merchants)/rate, merchants)
			st.start(b)
			ctx, stop := context.WithCancel(context.Background())
			var g errgroup.Group
			if c.attack {
				var attacker benchEvents
				for _, e := range events {
					if e.merchant == "mer_tarpit" {
						attacker = append(attacker, e)
					}
				}
				g.Go(func() error { return st.redeliverStorm(ctx, attacker, tarpitEndpoints, redeliveries) })
			}
			b.ResetTimer()
			st.receiveAt(b, events, len(merchants))
			var ok benchEvents
			for _, e := range events {
				if e.merchant == healthy {
					ok = append(ok, e)
				}
			}
			st.rcv.wait(b, ok.ids(), 5*time.Minute)
			b.StopTimer()
			stop()
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
			st.reportLatency(b, ok)
			b.ReportMetric(float64(st.rcv.slowCalls()), "tarpit_attempts")
		})
	}
}

// redeliverStorm redelivers events (the tarpit merchant's) to its
// endpoints, perSecond of them, until ctx ends: a merchant asking again and
// again.
// Redelivering an event not fanned out yet is refused (not found), as it
// would be for the merchant.
func (st *benchStack) redeliverStorm(ctx context.Context, events benchEvents, endpoints []string, perSecond int) error {
	if len(events) == 0 {
		return nil
	}
	tick := time.NewTicker(time.Second / time.Duration(perSecond))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		e := events[i%len(events)]
		err := st.svc.Redeliver(ctx, webhooks.Redeliver{Principal: platform, EndpointID: endpoints[i%len(endpoints)], EventID: e.id})
		if err != nil && !errors.Is(err, webhooks.ErrEventNotFound) && ctx.Err() == nil {
			return err
		}
	}
}

// benchStack is the webhooks service as serve wires it — the async
// inbox's receiver, the processor that fans out, the delivery workers
// woken after each fan-out — without the SQS consumer and the API, on a
// fresh database, with a local receiver.
type benchStack struct {
	cfg      config
	pool     *pgxpool.Pool
	svc      *webhooks.Service
	receiver *inbox.Service[webhooks.Fanout, webhooks.Event]
	proc     *inbox.Processor[webhooks.Fanout, webhooks.Event]
	worker   *webhooks.Worker
	claims   *countingClaims
	rcv      *benchReceiver
}

// countingClaims counts the delivery workers' claims, and those that
// found nothing due.
type countingClaims struct {
	webhooks.Deliveries
	claims, empty atomic.Int64
}

func (c *countingClaims) ClaimDeliveries(ctx context.Context, dc webhooks.DeliveryClaim) ([]webhooks.Claimed, error) {
	got, err := c.Deliveries.ClaimDeliveries(ctx, dc)
	c.claims.Add(1)
	if len(got) == 0 {
		c.empty.Add(1)
	}
	return got, err
}

// newBenchStack configures the service from the defaults and env, as
// loadConfig reads them; tune, when not nil, changes the delivery workers'
// configuration.
func newBenchStack(b testing.TB, env map[string]string, tune func(*webhooks.WorkerConfig)) *benchStack {
	b.Helper()
	vars := baseEnv()
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := loadConfig(getenvFrom(vars), true)
	if err != nil {
		b.Fatal(err)
	}
	cfg.DatabaseURL = pgtest.NewDatabase(b)
	ctx := context.Background()
	log := logtest.Discard()
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Config{DefaultMaxConns: cfg.poolSize()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if err := applyMigrations(ctx, pool, log); err != nil {
		b.Fatal(err)
	}
	st := &benchStack{cfg: cfg, pool: pool, rcv: newBenchReceiver(b)}
	sealer, err := webhooks.NewSealer(cfg.SecretsKey)
	if err != nil {
		b.Fatal(err)
	}
	reg := lifecycle.NewRegistry()
	inboxMetrics, err := metrics.NewInbox(reg)
	if err != nil {
		b.Fatal(err)
	}
	webhookMetrics, err := webhooksmetrics.New(reg)
	if err != nil {
		b.Fatal(err)
	}
	schemas, err := eventschema.New()
	if err != nil {
		b.Fatal(err)
	}
	store := webhookstore.New(pool)
	sender := webhooksender.New(webhooksender.Config{AllowPrivateTargets: true})
	st.claims = &countingClaims{Deliveries: store}
	wcfg := cfg.workerConfig()
	if tune != nil {
		tune(&wcfg)
	}
	st.worker = webhooks.NewWorker(st.claims, sender, sealer, cfg.Schedule, log, webhookMetrics, time.Now, wcfg)
	st.proc = inbox.NewProcessor(store, webhooks.Handler{MaxAmount: cfg.MaxAmount}, schemas, log, inboxMetrics, time.Now, cfg.processorConfig(st.worker))
	st.receiver = inbox.NewService(store, st.proc, time.Now, inbox.Config{Mode: inbox.Async})
	svcCfg := cfg.serviceConfig()
	svcCfg.AllowPrivateTargets = true
	st.svc = webhooks.NewService(store, sealer, time.Now, svcCfg)
	return st
}

// start runs the processor and the delivery workers until the benchmark
// ends; the cleanup waits for them (the receiver is closed after).
func (st *benchStack) start(b testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	var g errgroup.Group
	g.Go(func() error { return st.proc.Run(ctx) })
	g.Go(func() error { return st.worker.Run(ctx) })
	b.Cleanup(func() {
		cancel()
		if err := g.Wait(); err != nil {
			b.Error(err)
		}
	})
}

// endpoints makes n merchants with one endpoint each, all subscribed to
// every event, on the receiver's path.
func (st *benchStack) endpoints(b testing.TB, n int, path string) []string {
	merchants := make([]string, n)
	for i := range merchants {
		merchants[i] = fmt.Sprintf("mer_%d", i)
		st.endpoint(b, merchants[i], path)
	}
	return merchants
}

func (st *benchStack) endpoint(b testing.TB, merchant, path string) {
	_, err := st.svc.Create(context.Background(), webhooks.CreateEndpoint{Principal: platform, MerchantID: merchant,
		URL: st.rcv.srv.URL + path, EnabledEvents: []string{webhooks.AllEvents}})
	if err != nil {
		b.Fatal(err)
	}
}

// benchEvent is one payment.created, and when its inbox row committed.
type benchEvent struct {
	id, merchant string
	body         []byte
	committed    time.Time
}

type benchEvents []*benchEvent

func (es benchEvents) ids() []string {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.id
	}
	return ids
}

// events makes n events spread round-robin over merchants, the bodies the
// payments relay publishes.
func (st *benchStack) events(n int, merchants []string) benchEvents {
	es := make(benchEvents, n)
	for i := range es {
		id, paymentID, merchant := uuid.NewString(), uuid.NewString(), merchants[i%len(merchants)]
		body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created","source":"/payments","subject":%q,"time":%q,"datacontenttype":"application/json","dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"payment_id":%q,"amount":1050,"currency":"BRL","payer_id":"cus_1","merchant_id":%q}}`,
			id, paymentID, time.Now().UTC().Format(time.RFC3339Nano), paymentID, merchant)
		es[i] = &benchEvent{id: id, merchant: merchant, body: []byte(body)}
	}
	return es
}

// receiveAt receives the events, as the SQS consumer would, rate a second
// (paced from the start, up to 16 at once so that one slow commit does not
// hold the rest back), or with rate 0 as fast as the configured consumer
// loops (WEBHOOKS_WORKERS) take them. Each event's commit time is taken
// when Receive returns: after the commit.
func (st *benchStack) receiveAt(b *testing.B, events benchEvents, rate int) {
	ctx := context.Background()
	var g errgroup.Group
	receive := func(e *benchEvent) error {
		res, err := st.receiver.Receive(ctx, e.body)
		e.committed = time.Now()
		if err != nil {
			return err
		}
		if res.Disposition != inbox.Recorded {
			return fmt.Errorf("event %s: %s, want recorded", e.id, res.Disposition)
		}
		return nil
	}
	if rate == 0 {
		var mu sync.Mutex
		next := 0
		for range st.cfg.Workers {
			g.Go(func() error {
				for {
					mu.Lock()
					i := next
					next++
					mu.Unlock()
					if i >= len(events) {
						return nil
					}
					if err := receive(events[i]); err != nil {
						return err
					}
				}
			})
		}
	} else {
		g.SetLimit(16)
		start := time.Now()
		for i, e := range events {
			time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
			g.Go(func() error { return receive(e) })
		}
		b.ReportMetric(float64(len(events))/time.Since(start).Seconds(), "events/s")
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// reportLatency reports the events' commit → first arrival at the
// receiver, p50 and p99, in milliseconds.
func (st *benchStack) reportLatency(b *testing.B, events benchEvents) {
	lat := make([]time.Duration, 0, len(events))
	arrived := st.rcv.arrivals()
	for _, e := range events {
		at, ok := arrived[e.id]
		if !ok {
			b.Fatalf("event %s never arrived", e.id)
		}
		lat = append(lat, at.Sub(e.committed))
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.50), "p50_ms")
	b.ReportMetric(q(0.99), "p99_ms")
}

// benchReceiver is the merchants' endpoints: /hook answers 204 at once
// and notes when each webhook-id first arrived; /slow answers only after
// the attempt has given up.
type benchReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	first   map[string]time.Time
	slow    int
	arrived chan struct{} // a signal after each new arrival
}

func newBenchReceiver(b testing.TB) *benchReceiver {
	r := &benchReceiver{first: map[string]time.Time{}, arrived: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		_, _ = io.Copy(io.Discard, req.Body)
		if strings.HasPrefix(req.URL.Path, "/slow") {
			r.mu.Lock()
			r.slow++
			r.mu.Unlock()
			select {
			case <-req.Context().Done(): // the sender gave up
			case <-time.After(time.Minute):
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		id := req.Header.Get("webhook-id")
		r.mu.Lock()
		if _, seen := r.first[id]; !seen {
			r.first[id] = now
		}
		r.mu.Unlock()
		select {
		case r.arrived <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(r.srv.Close)
	return r
}

// wait returns once every one of ids has arrived, failing after within.
func (r *benchReceiver) wait(b testing.TB, ids []string, within time.Duration) {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		missing := 0
		for _, id := range ids {
			if _, ok := r.first[id]; !ok {
				missing++
			}
		}
		r.mu.Unlock()
		if missing == 0 {
			return
		}
		select {
		case <-r.arrived:
		case <-deadline.C:
			b.Fatalf("%d of %d events did not arrive within %s", missing, len(ids), within)
		}
	}
}

func (r *benchReceiver) arrivals() map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]time.Time, len(r.first))
	for k, v := range r.first {
		out[k] = v
	}
	return out
}

func (r *benchReceiver) slowCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.slow
}

// cpuCost is the CPU time taken so far by the process and by the
// database's backends, to report per delivery at the end.
type cpuCost struct {
	st            *benchStack
	cpu           time.Duration
	pg            map[int]time.Duration
	pgOK          bool
	claims, empty int64
}

func (st *benchStack) measureCPU() cpuCost {
	pg, ok := backendCPU(context.Background(), st.pool)
	return cpuCost{st: st, cpu: processCPU(), pg: pg, pgOK: ok, claims: st.claims.claims.Load(), empty: st.claims.empty.Load()}
}

// report reports the CPU used since per delivery (b.N deliveries):
// cpu_us/delivery for the process, pg_cpu_us/delivery for the database's
// backends when Postgres runs on this machine; and the delivery workers'
// claims per delivery, with those that found nothing.
func (c cpuCost) report(b *testing.B) {
	b.ReportMetric(float64(c.st.claims.claims.Load()-c.claims)/float64(b.N), "claims/delivery")
	b.ReportMetric(float64(c.st.claims.empty.Load()-c.empty)/float64(b.N), "empty_claims/delivery")
	b.ReportMetric(float64((processCPU()-c.cpu).Microseconds())/float64(b.N), "cpu_us/delivery")
	if pg, ok := postgresCPUSince(context.Background(), c.st.pool, c.pg); ok && c.pgOK {
		b.ReportMetric(float64(pg.Microseconds())/float64(b.N), "pg_cpu_us/delivery")
	}
}

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendCPU is the CPU time each Postgres backend connected to db's
// database has used so far, by process id, read from /proc: the server
// must run on this machine (ok is false otherwise). Only this database's
// backends are counted, so the other clients of a shared server are not;
// the server's background processes (WAL writer, autovacuum) are not
// either.
func backendCPU(ctx context.Context, db *pgxpool.Pool) (map[int]time.Duration, bool) {
	rows, err := db.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`)
	if err != nil {
		return nil, false
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil || len(pids) == 0 {
		return nil, false
	}
	out := make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		if t, ok := procStat(int(pid)); ok {
			// /proc counts in USER_HZ, 100 a second on every Linux this runs on.
			out[int(pid)] = time.Duration(t.utime+t.stime) * 10 * time.Millisecond
		}
	}
	return out, len(out) > 0
}

// postgresCPUSince is the CPU time this database's backends used since
// before: a backend that exited meanwhile is lost, one that started is
// counted whole.
func postgresCPUSince(ctx context.Context, db *pgxpool.Pool, before map[int]time.Duration) (time.Duration, bool) {
	after, ok := backendCPU(ctx, db)
	if !ok {
		return 0, false
	}
	var d time.Duration
	for pid, t := range after {
		d += t - before[pid]
	}
	return d, true
}

type procTimes struct{ utime, stime int64 }

// procStat reads the user and system CPU times of a /proc/<pid>/stat.
func procStat(pid int) (procTimes, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procTimes{}, false
	}
	// The command, in parentheses, may hold spaces: the fields follow it.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return procTimes{}, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	return procTimes{utime: ut, stime: st}, err1 == nil && err2 == nil
}

// BenchmarkClaim measures one delivery worker's claim against a backlog:
// ten merchants with one endpoint each, pending deliveries spread evenly
// over them, all due, two of each endpoint already leased (a drain in
// progress). Each iteration claims one delivery, as a worker does, with the
// default caps, and gives its lease back, so the backlog stays as it was.
// The claim's cost must not grow with the backlog: pending=1000 and
// pending=100000 are compared in docs/BENCHMARKS.md.
//
//	go test -run '^$' -bench 'Claim$' -benchtime 2000x ./cmd/webhooks/
func BenchmarkClaim(b *testing.B) {
	for _, pending := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			st := newBenchStack(b, nil, nil)
			st.endpoints(b, 10, "/hook")
			ctx := context.Background()
			if _, err := st.pool.Exec(ctx, `
				INSERT INTO webhook_deliveries (endpoint_id, merchant_id, event_id, event_type, payload, created_at, next_attempt_at)
				SELECT e.id, e.merchant_id, gen_random_uuid(), 'payment.created', '\x7b7d', now() - interval '1 hour', now() - interval '1 hour' + g * interval '1 microsecond'
				FROM generate_series(1, $1) g
				JOIN (SELECT id, merchant_id, row_number() OVER (ORDER BY id) - 1 AS n FROM webhook_endpoints) e ON e.n = g % 10`, pending); err != nil {
				b.Fatal(err)
			}
			if _, err := st.pool.Exec(ctx, `VACUUM ANALYZE webhook_deliveries`); err != nil {
				b.Fatal(err)
			}
			store := webhookstore.New(st.pool)
			wcfg := st.cfg.workerConfig()
			claim := func(limit, perEndpoint int) []webhooks.Claimed {
				now := time.Now()
				got, err := store.ClaimDeliveries(ctx, webhooks.DeliveryClaim{Limit: limit, PerEndpoint: perEndpoint, PerMerchant: wcfg.PerMerchant, At: now, LeaseUntil: now.Add(time.Hour)})
				if err != nil {
					b.Fatal(err)
				}
				return got
			}
			if got := claim(20, 2); len(got) != 20 { // two leases held per endpoint
				b.Fatalf("claimed %d, want two per endpoint", len(got))
			}
			b.ResetTimer()
			for range b.N {
				got := claim(1, wcfg.PerEndpoint)
				if len(got) != 1 {
					b.Fatalf("claimed %d, want 1", len(got))
				}
				if err := store.ReleaseDelivery(ctx, got[0].ID, got[0].LeaseUntil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
