// Command loadgen is the project's whole-path benchmark. In one run it
// measures, printing progress as it goes:
//
//   - the ceiling: the raw SQL write POST /payments commits (a payments row
//     and an outbox row in one transaction) at the given concurrency, straight
//     to Postgres with pgx — a Go pgbench;
//   - POST /payments on the real payments binary (built and started against a
//     fresh database, or the server at -url) at the same concurrency:
//     throughput, p50/p95/p99, errors, and the ratio to the ceiling;
//   - the relay's drain rate on a pre-filled backlog with 1, 2 and 4 replicas
//     built as cmd/payments builds them, through a null publisher, against
//     the drain ceiling (the relay's own statements from plain pgx loops),
//     then through a null publisher with an artificial per-call latency (the
//     broker-bound case), each after a warm-up drain on the same connections;
//   - the relay's steady-state lag, commit to publish, at a fixed write rate;
//   - with -only twophase, a two-phase payment — POST /payments with
//     capture_method manual, then its capture — against the SQL ceiling of
//     the same two transactions and against a one-phase payment;
//   - end to end, with AWS_ENDPOINT_URL set: payments → relay → SNS → SQS →
//     ledger at a fixed request rate, latency from the payment's commit to the
//     ledger's, read from the timestamps both databases recorded; then the API
//     throughput again with the relay and the ledger busy.
//
// It prints one table at the end and, with -report, writes it into the
// "Whole path" section of docs/BENCHMARKS.md. Run it in the tools module,
// from the repository root with go -C tools (paths are then relative to
// tools/; it builds the services' ./cmd/payments and ./cmd/ledger in their
// own module):
//
//	go -C tools run ./loadgen -database-url postgres://postgres@127.0.0.1:5432/postgres -report ../docs/BENCHMARKS.md
//
// The -database-url user must be allowed to create databases; every run uses
// fresh ones and drops them afterwards.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/provenance"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
	"github.com/payments-outbox/payments-outbox/tools/internal/proc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) { // -h printed the usage: not a failure
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

type options struct {
	DatabaseURL    string
	URL            string
	Concurrency    int
	Duration       time.Duration
	Warmup         time.Duration
	Runs           int
	Only           map[string]bool
	Backlog        int
	Replicas       []int
	PubLatency     time.Duration
	RelayWorkers   int
	Turns          int     // the default relay's claims at work in the database per replica
	ActiveClaims   int     // ordered mode's, shared by the replicas
	CompareNoTurns bool    // drain without turns too
	Orderings      []bool  // relay drains unordered (false), ordered (true) or both
	LagRate        float64 // rows per second in the steady-state lag phase
	LagReplicas    []int
	E2ERate        float64
	PaymentsDBArg  string
	PaymentsEnv    []string
	Report         string
	Keep           bool
	APIKey         string
}

var scenarios = []string{"ceiling", "api", "relay", "lag", "e2e", "twophase"}

// defaultScenarios are what a run without -only measures: the "Whole path"
// table. twophase is asked for by name.
var defaultScenarios = []string{"ceiling", "api", "relay", "lag", "e2e"}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var only, replicas, lagReplicas, env, ordering string
	fs.StringVar(&o.DatabaseURL, "database-url", getenv("DATABASE_URL"), "Postgres server to create the benchmark databases on (default $DATABASE_URL)")
	fs.StringVar(&o.URL, "url", "", "benchmark the payments service at this base URL instead of building and starting ./cmd/payments")
	fs.IntVar(&o.Concurrency, "c", 16, "concurrent requests (and ceiling transactions)")
	fs.DurationVar(&o.Duration, "d", 10*time.Second, "measured duration of each load phase")
	fs.DurationVar(&o.Warmup, "warmup", 2*time.Second, "unrecorded load before each phase")
	fs.IntVar(&o.Runs, "runs", 1, "repetitions of the ceiling, API and relay drain phases, interleaved; the table shows median and range")
	fs.StringVar(&only, "only", strings.Join(defaultScenarios, ","), "scenarios to run: "+strings.Join(scenarios, ",")+" (twophase: authorize + capture against its SQL ceiling and a one-phase payment)")
	fs.IntVar(&o.Backlog, "backlog", 100_000, "outbox rows pre-filled for each relay drain")
	fs.StringVar(&replicas, "replicas", "1,2,4", "relay replica counts to drain with")
	fs.DurationVar(&o.PubLatency, "publish-latency", 100*time.Millisecond, "artificial latency of each Publish call in the broker-bound relay rows (0: skip them)")
	fs.Float64Var(&o.LagRate, "lag-rate", 1000, "outbox rows committed per second during the relay lag phase")
	fs.StringVar(&lagReplicas, "lag-replicas", "1,4", "relay replica counts to measure the steady-state lag with")
	fs.IntVar(&o.RelayWorkers, "relay-workers", 0, "claim loops per relay replica (0: the relay's default)")
	fs.IntVar(&o.Turns, "turns", 1, "claim transactions of an unordered relay replica at work in the database at once (cmd/payments: 1)")
	fs.IntVar(&o.ActiveClaims, "active-claims", 0, "ordered mode: claim transactions of all the replicas at work in the database at once (0: the default, OUTBOX_ACTIVE_CLAIMS')")
	fs.BoolVar(&o.CompareNoTurns, "compare-no-turns", false, "also drain with unordered relays without turns, every worker at the database at once")
	fs.StringVar(&ordering, "ordering", "none", "relay drains: none (unordered), partition (ordered, as for a FIFO topic) or both")
	fs.Float64Var(&o.E2ERate, "e2e-rate", 20, "requests per second during the end-to-end latency phase (moto moves ~100 messages/s SNS→SQS)")
	fs.StringVar(&o.PaymentsDBArg, "payments-db-params", "", "query parameters added to the payments binary's DATABASE_URL, e.g. pool_max_conns=16")
	fs.StringVar(&env, "payments-env", "", "extra KEY=VALUE,… for the payments binary, e.g. LOG_LEVEL=warn")
	fs.StringVar(&o.Report, "report", "", "write the table into this Markdown file's \"Whole path\" section (e.g. ../docs/BENCHMARKS.md from tools/)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the benchmark databases")
	fs.StringVar(&o.APIKey, "api-key", getenv("LOADGEN_API_KEY"), "the API key to send to -url (default $LOADGEN_API_KEY); without -url loadgen issues a platform key itself")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.DatabaseURL == "" {
		return o, errors.New("-database-url or DATABASE_URL is required")
	}
	if o.URL != "" && o.APIKey == "" {
		return o, errors.New("-url needs -api-key (or LOADGEN_API_KEY): every route of the payments API needs a key")
	}
	if o.Concurrency <= 0 || o.Runs <= 0 || o.Backlog <= 0 || o.Duration <= 0 || o.E2ERate <= 0 {
		return o, errors.New("-c, -runs, -backlog, -d and -e2e-rate must be positive")
	}
	o.Only = map[string]bool{}
	for s := range strings.SplitSeq(only, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(scenarios, s) {
			return o, fmt.Errorf("-only: unknown scenario %q (want %s)", s, strings.Join(scenarios, ","))
		}
		o.Only[s] = true
	}
	switch ordering {
	case "none":
		o.Orderings = []bool{false}
	case "partition":
		o.Orderings = []bool{true}
	case "both":
		o.Orderings = []bool{false, true}
	default:
		return o, fmt.Errorf("-ordering: %q is not none, partition or both", ordering)
	}
	for s := range strings.SplitSeq(replicas, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return o, fmt.Errorf("-replicas: %q is not a positive integer", s)
		}
		o.Replicas = append(o.Replicas, n)
	}
	for s := range strings.SplitSeq(lagReplicas, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return o, fmt.Errorf("-lag-replicas: %q is not a positive integer", s)
		}
		o.LagReplicas = append(o.LagReplicas, n)
	}
	if o.LagRate <= 0 {
		return o, errors.New("-lag-rate must be positive")
	}
	for kv := range strings.SplitSeq(env, ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			if !strings.Contains(kv, "=") {
				return o, fmt.Errorf("-payments-env: %q is not KEY=VALUE", kv)
			}
			o.PaymentsEnv = append(o.PaymentsEnv, kv)
		}
	}
	return o, nil
}

// bench is one run's shared state.
type bench struct {
	o        options
	admin    *pgxpool.Pool
	dir      string // binaries and service logs
	suffix   string // unique per run: database and AWS resource names
	dbs      []string
	progress io.Writer
	rows     []row
	notes    []string
	ceiling  spread    // rate of the ceiling, for the ratios of later rows
	pages    hugePages // of the Postgres server, read once at the start
	bins     map[string]string
}

// binary builds cmd/<name> once per run and returns its path; the write path
// and the end-to-end phase run the same payments binary.
func (b *bench) binary(ctx context.Context, name string) (string, error) {
	if bin, ok := b.bins[name]; ok {
		return bin, nil
	}
	bin, err := proc.Build(ctx, b.dir, name)
	if err != nil {
		return "", err
	}
	if b.bins == nil {
		b.bins = map[string]string{}
	}
	b.bins[name] = bin
	return bin, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	admin, err := postgres.Open(ctx, o.DatabaseURL, postgres.Config{})
	if err != nil {
		return err
	}
	defer admin.Close()
	dir, err := os.MkdirTemp("", "loadgen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b := &bench{o: o, admin: admin, dir: dir, suffix: randomSuffix(), progress: stderr}
	defer b.dropDatabases()

	b.pages = postgresHugePages(ctx, admin)
	machine := describeMachine(ctx, admin, b.pages)
	fmt.Fprintf(stderr, "loadgen: %s\n", machine)
	started := time.Now()

	if o.Only["ceiling"] || o.Only["api"] {
		if err := b.writePath(ctx); err != nil {
			return err
		}
	}
	if o.Only["twophase"] {
		if err := b.twoPhase(ctx); err != nil {
			return err
		}
	}
	if o.Only["relay"] {
		if err := b.relayDrain(ctx); err != nil {
			return err
		}
	}
	if o.Only["lag"] {
		if err := b.relayLag(ctx); err != nil {
			return err
		}
	}
	if o.Only["e2e"] {
		if getenv("AWS_ENDPOINT_URL") == "" {
			b.notes = append(b.notes, "End-to-end rows skipped: AWS_ENDPOINT_URL was not set.")
			fmt.Fprintln(stderr, "loadgen: AWS_ENDPOINT_URL is unset; skipping the end-to-end phase")
		} else if err := b.endToEnd(ctx); err != nil {
			return err
		}
	}

	fmt.Fprintln(stdout)
	if err := writeText(stdout, b.rows); err != nil {
		return err
	}
	for _, n := range b.notes {
		fmt.Fprintln(stdout, n)
	}
	if o.Report == "" {
		return nil
	}
	var block strings.Builder
	fmt.Fprintf(&block, "Measured %s UTC (%s of wall time), commit %s, on %s.\n\n",
		started.UTC().Format("2006-01-02 15:04"), time.Since(started).Round(time.Second), gitRevision(ctx), machine)
	fmt.Fprintf(&block, "```sh\ngo -C tools run ./loadgen %s\n```\n\n", strings.Join(args, " "))
	writeMarkdown(&block, b.rows)
	for _, n := range b.notes {
		fmt.Fprintf(&block, "\n%s\n", n)
	}
	doc, err := os.ReadFile(o.Report)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.WriteFile(o.Report, []byte(spliceReport(string(doc), block.String())), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "loadgen: table written to %s\n", o.Report)
	return nil
}

// writePath measures the ceiling and the API at the same concurrency,
// interleaved run by run so that both see the same machine weather, and
// relates each API run to the ceiling run just before it.
func (b *bench) writePath(ctx context.Context) error {
	o := b.o
	dbURL, err := b.createDatabase(ctx, "payments", paymentsmigrations.FS)
	if err != nil {
		return err
	}
	pool, err := openPool(ctx, dbURL, o.Concurrency)
	if err != nil {
		return err
	}
	defer pool.Close()

	baseURL := o.URL
	var srv *proc.Process
	if o.Only["api"] && baseURL == "" {
		bin, err := b.binary(ctx, "payments")
		if err != nil {
			return err
		}
		// The relay is kept idle (no NOTIFY, an hourly poll) so this row is
		// the API alone; the end-to-end phase runs it with everything on. No
		// broker listens on the endpoint: payments starts without one, where
		// it would refuse a topic a real broker says does not exist.
		srv, err = startService(ctx, b.dir, bin, append([]string{
			"DATABASE_URL=" + withParams(dbURL, o.PaymentsDBArg),
			"AWS_ENDPOINT_URL=http://127.0.0.1:1",
			"PAYMENTS_TOPIC_ARN=arn:aws:sns:us-east-1:000000000000:loadgen-unused",
			// serve needs a signing key; nothing is published with it.
			"PAYMENTS_SIGNING_KEY_ID=loadgen-unused", "PAYMENTS_SIGNING_KEY=" + unusedSigningKey,
			"OUTBOX_NOTIFY=false", "OUTBOX_POLL_INTERVAL=1h",
			noRateLimit,
		}, o.PaymentsEnv...))
		if err != nil {
			return err
		}
		defer srv.Stop()
		baseURL = "http://" + srv.Addr()
	}

	var client *paymentClient
	if o.Only["api"] {
		key := o.APIKey
		if srv != nil {
			if key, err = platformKey(ctx, pool); err != nil {
				return err
			}
		}
		if client, err = newPaymentClient(baseURL, key, o.Concurrency); err != nil {
			return err
		}
		defer client.Close()
	}
	var ceil, ceilNotify, api []summary
	var ratios []float64
	var cpuPerReq []time.Duration
	for i := range o.Runs {
		fmt.Fprintf(b.progress, "loadgen: write path, run %d of %d\n", i+1, o.Runs)
		if o.Only["ceiling"] {
			if err := truncate(ctx, pool); err != nil {
				return err
			}
			ceil = append(ceil, b.phase("SQL ceiling", 0).run(ctx, rawWrite(pool, false)))
			if err := truncate(ctx, pool); err != nil {
				return err
			}
			ceilNotify = append(ceilNotify, b.phase("SQL ceiling + NOTIFY", 0).run(ctx, rawWrite(pool, true)))
		}
		if o.Only["api"] {
			if err := truncate(ctx, pool); err != nil {
				return err
			}
			cpu := srv.CPUTime()
			s := b.phase("POST /payments", 0).run(ctx, client.create)
			if cpu := srv.CPUTime() - cpu; cpu > 0 {
				perReq := cpu / time.Duration(max(s.All, 1))
				cpuPerReq = append(cpuPerReq, perReq)
				fmt.Fprintf(b.progress, "  POST /payments: the payments process used %s of CPU per request\n", perReq)
			}
			api = append(api, s)
			if len(ceil) > 0 {
				ratios = append(ratios, s.Rate()/ceil[len(ceil)-1].Rate())
			}
		}
	}
	conc := strconv.Itoa(o.Concurrency)
	if len(ceil) > 0 {
		b.ceiling = rateSpread(ceil)
		r := latencyRow("SQL ceiling: payments + outbox row, 1 round trip (pgx batch)", conc, ceil, "req/s")
		r.Ratio = spread{Median: 1, Min: 1, Max: 1, N: 1}
		r.Limit = "Postgres CPU (2 cores shared with the client)"
		b.rows = append(b.rows, r)
		r = latencyRow("SQL ceiling + pg_notify inside the transaction (for comparison)", conc, ceilNotify, "req/s")
		r.Ratio = ratioTo(r.Rate, b.ceiling)
		r.Limit = "NOTIFY's database-wide lock at commit serialises the commits; why paymentstore.Notifier sends it after them"
		b.rows = append(b.rows, r)
	}
	if len(api) > 0 {
		r := latencyRow("POST /payments (relay idle, OUTBOX_NOTIFY=false)", conc, api, "req/s")
		if len(ratios) > 0 {
			r.Ratio = spreadOf(ratios)
		}
		r.Limit = "CPU shared by client, server and Postgres"
		if len(cpuPerReq) > 0 {
			r.Limit += fmt.Sprintf("; the service used %s CPU/request", medianDuration(cpuPerReq).Round(time.Microsecond))
		}
		b.rows = append(b.rows, r)
	}
	return nil
}

// relayDrain measures the drain rate of the relay as cmd/payments runs it,
// with each replica count, through a null publisher (the database is the
// limit), against the drain ceiling — the relay's own statements sent by
// plain pgx loops, no relay code — measured in the same run; then with a
// slow null publisher, so that the broker is the bottleneck and replicas
// are what adds throughput. Every ratio is paired: a case against the
// ceiling, or against one replica, of the same repetition, minutes apart at
// most, so that the machine's weather moves both.
func (b *bench) relayDrain(ctx context.Context) error {
	o := b.o
	dbURL, err := b.createDatabase(ctx, "relay", paymentsmigrations.FS)
	if err != nil {
		return err
	}
	pool, err := openPool(ctx, dbURL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	if b.pages.known && !b.pages.on {
		b.notes = append(b.notes, "Postgres ran without huge pages: each new connection takes a page fault for every 4 kB of "+
			"the shared buffers it first touches, and more relay replicas open more connections. "+
			"The drains warm their connections first, but some of that cost remains (docs/BENCHMARKS.md, \"Huge pages\").")
	}
	workers := o.RelayWorkers
	if workers <= 0 {
		workers = outbox.WorkersFor(32) // cmd/payments' pool: the relay's default
	}
	base := drainCase{Workers: workers, Notify: true, Backlog: o.Backlog, Turns: o.Turns, ActiveClaims: o.ActiveClaims}
	with := func(mode string, replicas int, latency time.Duration) drainCase {
		c := base
		c.Mode, c.Replicas, c.Latency = mode, replicas, latency
		return c
	}
	var cases []drainCase
	var modes []string
	for _, ordered := range o.Orderings {
		if ordered {
			modes = append(modes, modeOrdered)
		} else {
			modes = append(modes, modeDefault)
			if o.CompareNoTurns {
				modes = append(modes, modeNoTurns)
			}
		}
	}
	if !slices.Contains(modes, modeOrdered) || len(modes) > 1 {
		for _, conns := range []int{1, workers} {
			c := with(modeCeiling, 1, 0)
			c.Workers = conns
			cases = append(cases, c)
		}
	}
	for _, m := range modes {
		for _, n := range o.Replicas {
			cases = append(cases, with(m, n, 0))
		}
	}
	if o.PubLatency > 0 {
		for _, m := range modes {
			if m == modeNoTurns {
				continue
			}
			for _, n := range o.Replicas {
				cases = append(cases, with(m, n, o.PubLatency))
			}
		}
	}
	// Runs are the outer loop, so every case's repetitions are spread over
	// the whole phase and see the same machine weather as the others.
	runs := make([][]summary, len(cases))
	for i := range o.Runs {
		for j, c := range cases {
			fmt.Fprintf(b.progress, "loadgen: %s, %d rows (run %d of %d)\n", c.name(), c.Backlog, i+1, o.Runs)
			s, err := drain(ctx, dbURL, pool, c, b.progress)
			if err != nil {
				return err
			}
			runs[j] = append(runs[j], s)
		}
	}
	// The ceiling the relays are held to is the relay's statements sent one
	// transaction at a time, as one replica of the default relay sends them
	// (one turn at the database); the ceiling from as many connections as a
	// replica has workers is a row of its own, against it.
	ceiling := make([]float64, o.Runs)
	for j, c := range cases {
		if c.Mode == modeCeiling && c.Workers == 1 {
			for i, s := range runs[j] {
				ceiling[i] = s.Rate()
			}
		}
	}
	type variant struct {
		mode    string
		latency time.Duration
	}
	one := map[variant]int{} // the case of one replica, for the scaling figure
	for j, c := range cases {
		if c.Replicas == 1 {
			one[variant{c.Mode, c.Latency}] = j
		}
	}
	for j, c := range cases {
		rate := rateSpread(runs[j])
		r := row{Scenario: c.name(), Conc: fmt.Sprintf("%d×%d workers", c.Replicas, c.Workers), Rate: rate, Unit: "rows/s"}
		if c.Mode == modeCeiling {
			r.Conc = fmt.Sprintf("%d", c.Workers)
		}
		var note []string
		if c.Latency == 0 && ceiling[0] > 0 {
			vs := make([]float64, len(runs[j]))
			for i, s := range runs[j] {
				vs[i] = s.Rate() / ceiling[i]
			}
			r.Ratio = spreadOf(vs)
		}
		if k, ok := one[variant{c.Mode, c.Latency}]; ok && c.Replicas > 1 {
			vs := make([]float64, len(runs[j]))
			for i, s := range runs[j] {
				vs[i] = s.Rate() / runs[k][i].Rate()
			}
			x := spreadOf(vs)
			note = append(note, fmt.Sprintf("%.2f× one replica (%.2f–%.2f)", x.Median, x.Min, x.Max))
		}
		reads := make([]float64, len(runs[j]))
		for k, s := range runs[j] {
			reads[k] = s.IndexReadsPerRow
		}
		slices.Sort(reads)
		note = append(note, fmt.Sprintf("%.1f index entries read per row", reads[len(reads)/2]))
		var pgCPU, relayCPU []time.Duration
		for _, s := range runs[j] {
			if s.ServerCPU > 0 {
				pgCPU = append(pgCPU, s.ServerCPU)
			}
			relayCPU = append(relayCPU, s.ClientCPU)
		}
		if len(pgCPU) > 0 {
			note = append(note, fmt.Sprintf("CPU per row: Postgres %s, client %s",
				medianDuration(pgCPU).Round(100*time.Nanosecond), medianDuration(relayCPU).Round(100*time.Nanosecond)))
		}
		switch {
		case c.Mode == modeCeiling:
			r.Limit = "Postgres CPU"
		case c.Latency > 0:
			r.Limit = fmt.Sprintf("the publisher: ≤ %d rows in flight per replica", c.Workers*100)
		default:
			r.Limit = "Postgres CPU: claim + mark"
		}
		r.Limit += "; " + strings.Join(note, "; ")
		b.rows = append(b.rows, r)
	}
	b.notes = append(b.notes, "Relay drains: \"vs ceiling\" is against the drain ceiling from 1 connection of the same repetition "+
		"(the relay's statements, one transaction at a time, as a replica of the default relay sends them); "+
		"\"× one replica\" is paired the same way.")
	return nil
}

// endToEnd runs the whole path on the real broker: both binaries, NOTIFY on.
func (b *bench) endToEnd(ctx context.Context) error {
	o := b.o
	awsEnv, err := provisionAWS(ctx, b.suffix)
	if err != nil {
		return err
	}
	payURL, err := b.createDatabase(ctx, "e2e_payments", paymentsmigrations.FS)
	if err != nil {
		return err
	}
	ledURL, err := b.createDatabase(ctx, "e2e_ledger", ledgermigrations.FS)
	if err != nil {
		return err
	}
	payDB, err := openPool(ctx, payURL, 2)
	if err != nil {
		return err
	}
	defer payDB.Close()
	ledDB, err := openPool(ctx, ledURL, 2)
	if err != nil {
		return err
	}
	defer ledDB.Close()

	payBin, err := b.binary(ctx, "payments")
	if err != nil {
		return err
	}
	ledBin, err := b.binary(ctx, "ledger")
	if err != nil {
		return err
	}
	// Signing on, as deployed: payments signs every event, the ledger
	// verifies each.
	signer, err := provenance.GenerateSigner("loadgen")
	if err != nil {
		return err
	}
	pay, err := startService(ctx, b.dir, payBin, append(append([]string{
		"DATABASE_URL=" + withParams(payURL, o.PaymentsDBArg), "OUTBOX_NOTIFY=true", noRateLimit,
		"PAYMENTS_SIGNING_KEY_ID=" + signer.KeyID(), "PAYMENTS_SIGNING_KEY=" + signer.Seed(),
	}, awsEnv...), o.PaymentsEnv...))
	if err != nil {
		return err
	}
	defer pay.Stop()
	led, err := startService(ctx, b.dir, ledBin, append([]string{"DATABASE_URL=" + ledURL,
		"PAYMENTS_PUBLIC_KEYS=" + signer.PublicKey().String()}, awsEnv...))
	if err != nil {
		return err
	}
	defer led.Stop()
	key, err := platformKey(ctx, payDB)
	if err != nil {
		return err
	}
	client, err := newPaymentClient("http://"+pay.Addr(), key, o.Concurrency)
	if err != nil {
		return err
	}
	defer client.Close()

	p := b.phase(fmt.Sprintf("end-to-end at %.0f/s", o.E2ERate), 0)
	p.Rate = o.E2ERate
	p.Warmup = 0
	api := p.run(ctx, client.create)
	if err := waitLedger(ctx, payDB, ledDB, 3*time.Minute, b.progress); err != nil {
		return err
	}
	lat, err := endToEnd(ctx, payDB, ledDB)
	if err != nil {
		return err
	}
	e := summarize(lat, api.Errors, api.Elapsed)
	b.rows = append(b.rows, row{
		Scenario: fmt.Sprintf("end to end: payment commit → ledger commit, %.0f req/s, NOTIFY on", o.E2ERate),
		Conc:     strconv.Itoa(o.Concurrency), Rate: rateSpread([]summary{api}), Unit: "req/s",
		P50: e.P50, P95: e.P95, P99: e.P99, Errors: api.Errors,
		Limit: fmt.Sprintf("%d events; SNS→SQS delivery and the ledger's long poll on the test endpoint", len(lat)),
	})

	s := b.phase("POST /payments, relay + ledger live", 0).run(ctx, client.create)
	r := latencyRow("POST /payments (NOTIFY on, relay → SNS and ledger running)", strconv.Itoa(o.Concurrency), []summary{s}, "req/s")
	r.Ratio = ratioTo(r.Rate, b.ceiling)
	r.Limit = "CPU shared with the relay, the ledger and the SNS/SQS endpoint"
	b.rows = append(b.rows, r)
	return nil
}

func (b *bench) phase(name string, rate float64) phase {
	return phase{Name: name, Concurrency: b.o.Concurrency, Warmup: b.o.Warmup, Duration: b.o.Duration, Rate: rate, Progress: b.progress}
}

// latencyRow turns repetitions into a row: the rate's median and range, and
// the median of each latency percentile.
func latencyRow(name, conc string, runs []summary, unit string) row {
	r := row{Scenario: name, Conc: conc, Rate: rateSpread(runs), Unit: unit}
	var p50, p95, p99 []time.Duration
	for _, s := range runs {
		p50, p95, p99 = append(p50, s.P50), append(p95, s.P95), append(p99, s.P99)
		r.Errors += s.Errors
	}
	r.P50, r.P95, r.P99 = medianDuration(p50), medianDuration(p95), medianDuration(p99)
	return r
}

func rateSpread(runs []summary) spread {
	rates := make([]float64, len(runs))
	for i, s := range runs {
		rates[i] = s.Rate()
	}
	return spreadOf(rates)
}

// ratioTo relates a rate to the ceiling's median; none without a ceiling.
func ratioTo(s, ceiling spread) spread {
	if ceiling.N == 0 || ceiling.Median == 0 || s.N == 0 {
		return spread{}
	}
	c := ceiling.Median
	return spread{Median: s.Median / c, Min: s.Min / c, Max: s.Max / c, N: s.N}
}

// unusedSigningKey is the signing key the API-only phases start payments
// with: serve needs one, and no event of theirs reaches a broker. The
// standard base64 of a 32-byte seed, of no use to anyone.
const unusedSigningKey = "bG9hZGdlbi1zaWduaW5nLWtleS1uZXZlci11c2VkISE="
