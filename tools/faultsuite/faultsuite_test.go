package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/tools/internal/proc"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	awstest.Terminate()
	os.Exit(code)
}

// TestFaultSuite is one shorter run of the suite, sized for CI (moto relays
// from SNS to SQS slowly: docs/BENCHMARKS.md): payments at 8/s for as long as
// the faults last (a couple of hundred) through every fault, then every
// guarantee checked. It runs the ledger's sync inbox behind the relay's
// unordered mode on a standard topic and queues; TestFaultSuiteAsync runs
// the other two modes.
func TestFaultSuite(t *testing.T) {
	runCI(t, params{Payments: 150, Rate: 8, BrokerCut: 10 * time.Second, DBCut: 3 * time.Second, SlowFor: 4 * time.Second})
}

// TestFaultSuiteAsync is the same run, every fault and every guarantee, with
// the ledger's async inbox (LEDGER_INBOX_MODE=async), where the SIGKILL
// mid-batch hits recording, acknowledging and processing, behind the
// relay's ordered mode (OUTBOX_ORDERING=partition) on a FIFO topic and
// queues, where the payments crashes hit leased partitions. Between them
// the two runs cover each inbox mode and each relay mode; the other two
// pairings are the command's (-inbox-mode, -ordered). It is sized smaller,
// to keep CI's time: every fault still happens, each a little shorter.
// It also runs the webhooks service, whose inbox is async too, behind the
// same topic, against a receiver that fails at random while the faults last,
// with a SIGKILL of a webhooks replica mid-attempt (webhooks.go).
func TestFaultSuiteAsync(t *testing.T) {
	runCI(t, params{Payments: 80, Rate: 8, BrokerCut: 6 * time.Second, DBCut: 3 * time.Second, SlowFor: 3 * time.Second, InboxMode: "async", Ordered: true, Webhooks: true})
}

func runCI(t *testing.T, p params) {
	if testing.Short() {
		t.Skip("the fault suite runs the real binaries; skipped with -short")
	}
	// Resolve the servers first, so a missing one skips (or fails under CI)
	// before anything is built.
	pgtest.URL(t)
	awstest.Endpoint(t)

	ctx := context.Background()
	var bins binaries
	var err error
	bins.payments, bins.ledger, err = buildBinaries(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if p.Webhooks {
		if bins.webhooks, err = proc.Build(ctx, t.TempDir(), "webhooks"); err != nil {
			t.Fatal(err)
		}
	}
	p.Progress = logWriter{t}
	rep := runSuite(ctx, t, bins, "ci-"+strings.ReplaceAll(p.modes(), "/", "-")+time.Now().Format("150405"), p)
	var table strings.Builder
	printTable(&table, []*report{rep})
	t.Log("\n" + table.String())
	for _, f := range rep.Failures {
		t.Error(f)
	}
}

// logWriter sends each progress line to t.Log, so `go test -v` streams them.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
