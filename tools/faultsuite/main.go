// Command faultsuite breaks the payments system on purpose and checks that
// nothing is lost and nothing is posted twice, as docs/PATTERN.md's "Failure
// windows" section promises.
//
// Each run builds the real payments and ledger binaries, starts two replicas
// of each on fresh databases and a fresh topic, queue and DLQ, puts a TCP
// proxy in front of Postgres and of the SNS/SQS endpoint, sends a steady
// stream of payments — automatic ones, and manual ones then captured whole
// or in part, canceled or left to expire — and refunds, with idempotency
// keys and client retries,
// and injects one fault after another: the broker unreachable, SIGKILL of a
// payments replica between publish and mark and at a random moment, a
// ledger handler slower than the visibility timeout, SIGKILL of a ledger
// replica mid-batch, Postgres unreachable, poison messages. Then it drains
// and asserts: `ledger reconcile` is clean, every 2xx has exactly one ledger
// transaction of its amount, every hold was placed once and released once
// (open only while its payment is authorized), each merchant's available and
// pending balances are what the payments database's payments add up to, no
// outbox row is left PENDING or DEAD, the DLQ holds exactly the poison, and
// each currency's entries sum to zero. With -webhooks (TestFaultSuiteAsync)
// the webhooks service runs too, against a receiver that fails at random, and
// every event must reach its merchant's endpoint, signed, and no other.
//
//	go -C tools run ./faultsuite -runs 5
//
// It needs DATABASE_URL and AWS_ENDPOINT_URL (or Docker for testcontainers),
// like the integration tests. docs/RELIABILITY.md records its results.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/payments-outbox/payments-outbox/tools/internal/proc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) { // -h printed the usage: not a failure
		fmt.Fprintln(os.Stderr, "faultsuite:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out, progress io.Writer) error {
	fs := flag.NewFlagSet("faultsuite", flag.ContinueOnError)
	runs := fs.Int("runs", 1, "how many runs")
	p := params{}
	fs.IntVar(&p.Payments, "payments", 300, "at least this many payments per run (traffic also lasts as long as the faults)")
	fs.Float64Var(&p.Rate, "rate", 10, "payments per second")
	fs.DurationVar(&p.BrokerCut, "broker-cut", 10*time.Second, "how long the SNS/SQS endpoint is cut")
	fs.DurationVar(&p.DBCut, "db-cut", 4*time.Second, "how long Postgres is cut")
	fs.DurationVar(&p.SlowFor, "slow", 5*time.Second, "how long the ledger handler is slower than the visibility timeout")
	fs.StringVar(&p.InboxMode, "inbox-mode", "sync", "the ledger's LEDGER_INBOX_MODE: sync or async")
	fs.BoolVar(&p.Ordered, "ordered", false, "the relay's ordered mode on a FIFO topic and queues (OUTBOX_ORDERING=partition); unordered on standard ones otherwise")
	fs.BoolVar(&p.Webhooks, "webhooks", false, "run the webhooks service too, against a receiver that fails at random, and check every event reached its merchant's endpoint, signed")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !*quiet {
		p.Progress = progress
	}

	tb := &mainTB{}
	defer tb.cleanup()
	var bins binaries
	var err error
	if err := tb.do(func() {
		bins.payments, bins.ledger, err = buildBinaries(ctx, tb.TempDir())
		if err == nil && p.Webhooks {
			bins.webhooks, err = proc.Build(ctx, tb.TempDir(), "webhooks")
		}
	}); err != nil {
		return err
	}
	if err != nil {
		return err
	}

	var reps []*report
	failed := false
	for i := range *runs {
		name := fmt.Sprintf("run%d-%d", i+1, time.Now().Unix())
		run := &mainTB{}
		var rep *report
		err := run.do(func() { rep = runSuite(ctx, run, bins, name, p) })
		run.cleanup()
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		reps = append(reps, rep)
		if len(rep.Failures) > 0 {
			failed = true
			fmt.Fprintf(out, "run %d FAILED:\n  %s\n", i+1, strings.Join(rep.Failures, "\n  "))
		}
	}
	printTable(out, reps)
	if failed {
		return errors.New("some runs broke a guarantee")
	}
	return nil
}

// printTable prints one line per run; docs/RELIABILITY.md explains the columns.
func printTable(out io.Writer, reps []*report) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "run\tinbox/relay\tpayments sent/accepted\tmanual captured/canceled/expired\trefunds sent/accepted\tfaults\t503s\tevents\tpublished\tdup suppressed\tmax oldest pending\tdrain\ttotal\tresult\t")
	for i, r := range reps {
		result := "ok"
		if len(r.Failures) > 0 {
			result = fmt.Sprintf("%d FAILURES", len(r.Failures))
		}
		fmt.Fprintf(w, "%d\t%s\t%d/%d\t%d: %d/%d/%d\t%d/%d\t%d\t%d\t%d\t%.0f\t%.0f\t%.1fs\t%.1fs\t%.0fs\t%s\t\n", i+1, r.Modes,
			r.Sent, r.Accepted, r.Manual, r.Captured, r.Canceled, r.Expired, r.RefundsSent, r.RefundsAccepted, len(r.Faults), r.Unavailable,
			r.Events, r.Published, r.Duplicates, r.MaxOldestAge, r.Drain.Seconds(), r.Total.Seconds(), result)
	}
	_ = w.Flush()
	if len(reps) > 0 {
		fmt.Fprintf(out, "\nfaults of each run:\n  %s\nPostgres-cut probes of the last run: %s\n", strings.Join(reps[len(reps)-1].Faults, "\n  "), reps[len(reps)-1].Probe)
	}
}

// mainTB lets the suite use the test helpers (pgtest, awstest) outside `go
// test`: it provides the few testing.TB methods they call. Embedding the
// interface satisfies its unexported method; any other method would panic on
// the nil interface, which the suite never calls.
type mainTB struct {
	testing.TB
	cleanups []func()
}

type tbFailure string

func (m *mainTB) Helper()                           {}
func (m *mainTB) Name() string                      { return "faultsuite" }
func (m *mainTB) Cleanup(f func())                  { m.cleanups = append(m.cleanups, f) }
func (m *mainTB) Logf(format string, args ...any)   { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (m *mainTB) Fatalf(format string, args ...any) { panic(tbFailure(fmt.Sprintf(format, args...))) }
func (m *mainTB) Skipf(format string, args ...any)  { panic(tbFailure(fmt.Sprintf(format, args...))) }
func (m *mainTB) Fatal(args ...any)                 { panic(tbFailure(fmt.Sprint(args...))) }

func (m *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "faultsuite-")
	if err != nil {
		m.Fatalf("temp dir: %v", err)
	}
	m.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// do runs f, turning a Fatalf inside it into an error.
func (m *mainTB) do(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, ok := r.(tbFailure)
			if !ok {
				panic(r)
			}
			err = errors.New(string(msg))
		}
	}()
	f()
	return nil
}

func (m *mainTB) cleanup() {
	for i := len(m.cleanups) - 1; i >= 0; i-- {
		m.cleanups[i]()
	}
	m.cleanups = nil
}
