// Command testrun is `make test`: go test with the servers the integration
// tests need, and an account of what ran that a passing run cannot hide.
//
//	go run ./tools/testrun [go test flags] [packages]
//
// go test prints one "ok" line for a passing package, whatever its tests did,
// so a run without Postgres or SNS/SQS looks green while every integration
// test skipped. testrun runs go test -json and prints a line per package with
// its counts, the output of every failed test, every skipped test's reason
// (grouped, with how many tests gave it), and a closing line:
//
//	tests: 212 passed, 0 failed, 0 skipped
//
// When DATABASE_URL or AWS_ENDPOINT_URL is unset and Docker is up, it starts
// one Postgres or one LocalStack container for the whole run and passes its
// address down, so the packages share one server of each kind instead of
// starting one each; it removes them at the end.
//
// It exits non-zero when go test failed, when no test ran, and, with CI set,
// when any test was skipped: CI must never go green by skipping.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer) int {
	env, stopServers := startServers(ctx, getenv, out)
	defer stopServers()

	cmd := exec.CommandContext(ctx, "go", append([]string{"test", "-json"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = out
	// On a signal, let go test stop its test binaries and report, as it does
	// when the terminal interrupts it; kill it only if it hangs.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(out, "testrun:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(out, "testrun:", err)
		return 2
	}
	r := newReport(out)
	r.read(stdout)
	goErr := cmd.Wait()
	code, why := verdict(r.summary(), goErr, getenv("CI") != "")
	if why != "" {
		fmt.Fprintln(out, "testrun:", why)
	}
	return code
}

// verdict is testrun's exit code and, when it fails the run, why: go test
// failed, no test ran, or, with CI set, a test was skipped.
func verdict(sum summary, goErr error, ci bool) (code int, why string) {
	switch {
	case goErr != nil || sum.failed > 0:
		return 1, fmt.Sprintf("go test failed (%v)", goErr)
	case sum.total() == 0:
		return 1, "no test ran"
	case ci && sum.skipped > 0:
		return 1, "CI is set, and in CI a skipped test fails the run: CI must never go green by skipping"
	default:
		return 0, ""
	}
}

// startServers starts a Postgres and a LocalStack container for the run when
// their variable is unset, and returns the environment that points the tests
// at them and a function that removes them. Without Docker it says so once
// and starts nothing: the tests then skip, each saying why.
func startServers(ctx context.Context, getenv func(string) string, out io.Writer) (env []string, stop func()) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if getenv("DATABASE_URL") == "" {
		fmt.Fprintln(out, "testrun: DATABASE_URL is unset: starting one Postgres container for the run")
		u, s, err := pgtest.StartServer(sctx)
		if err != nil {
			fmt.Fprintf(out, "testrun: no Postgres: %v\n", err)
		} else {
			stops = append(stops, s)
			env = append(env, "DATABASE_URL="+u)
		}
	}
	if getenv("AWS_ENDPOINT_URL") == "" {
		fmt.Fprintln(out, "testrun: AWS_ENDPOINT_URL is unset: starting one LocalStack container for the run")
		ep, s, err := awstest.StartServer(sctx)
		if err != nil {
			fmt.Fprintf(out, "testrun: no LocalStack: %v\n", err)
		} else {
			stops = append(stops, s)
			env = append(env, "AWS_ENDPOINT_URL="+ep)
			// LocalStack takes any credentials; the binaries the tests
			// start read them from the SDK's default chain.
			if getenv("AWS_ACCESS_KEY_ID") == "" {
				env = append(env, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test")
			}
			if getenv("AWS_REGION") == "" {
				env = append(env, "AWS_REGION=us-east-1")
			}
		}
	}
	return env, stop
}
