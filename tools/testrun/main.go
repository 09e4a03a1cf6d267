// Command testrun is `make test`: go test with the servers the integration
// tests need, and an account of what ran that a passing run cannot hide.
//
//	go -C tools run ./testrun [go test flags] [packages]
//
// The repository holds two Go modules: the services' (the root) and the
// tools' (tools/, with the heavy dependencies of the benchmark, the fault
// suite, the walkthrough and the compose tests). testrun runs go test in
// each, one after the other, and reports on both as one run. It names
// packages from the repository root, whichever directory it runs in:
// ./adapters/sqs/... is the services' module's, ./tools/faultsuite the
// tools module's, and ./... (the default) every package of both.
//
// go test prints one "ok" line for a passing package, whatever its tests did,
// so a run without Postgres or SNS/SQS looks green while every integration
// test skipped. testrun runs go test -json and prints a line per package with
// its counts, the output of every failed test, every skipped test's reason
// (grouped, with how many tests gave it), the tests that skipped only after
// a second or more (a skip should cost nothing), and a closing line:
//
//	tests: 212 passed, 0 failed, 0 skipped
//
// When DATABASE_URL or AWS_ENDPOINT_URL is unset and Docker is up, it starts
// one Postgres or one LocalStack container for the whole run and passes its
// address down, so the packages share one server of each kind instead of
// starting one each; it removes them at the end.
//
// It exits non-zero when go test failed, when no test ran, and, with CI set,
// when any test was skipped or a container it had to start did not: CI
// must never go green by skipping. The one exception is a skip that is a
// state the project is expected to be in, named test by test with its reason
// in expectedSkips: a fork's rolling-update test before its first release.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
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
	root, err := repositoryRoot(ctx)
	if err != nil {
		fmt.Fprintln(out, "testrun:", err)
		return 2
	}
	flags, modules, err := plan(args, root)
	if err != nil {
		fmt.Fprintln(out, "testrun:", err)
		return 2
	}
	env, stopServers, err := startServers(ctx, getenv, out)
	defer stopServers()
	if err != nil {
		fmt.Fprintln(out, "testrun:", err)
		return 1
	}

	r := newReport(out)
	var goErr error
	for _, m := range modules {
		if err := goTest(ctx, m, flags, env, r); err != nil && goErr == nil {
			goErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	sum := r.summary()
	code, why := verdict(sum, goErr, getenv("CI") != "")
	if why != "" {
		fmt.Fprintln(out, "testrun:", why)
	} else if getenv("CI") != "" && sum.expected > 0 {
		fmt.Fprintf(out, "testrun: CI is set, and lets pass %d skip(s) above that are a state the project is expected to be in (tools/testrun/expected.go)\n", sum.expected)
	}
	return code
}

// goTest runs go test -json on m's packages, in m's module and against its
// go.mod alone (GOWORK=off), and feeds what it prints to r.
func goTest(ctx context.Context, m module, flags, env []string, r *report) error {
	cmd := exec.CommandContext(ctx, "go", append(append([]string{"test", "-json"}, flags...), m.packages...)...)
	cmd.Dir = m.dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), env...)
	cmd.Stderr = r.out
	// On a signal, let go test stop its test binaries and report, as it does
	// when the terminal interrupts it; kill it only if it hangs.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	r.read(stdout)
	return cmd.Wait()
}

// repositoryRoot is the services' module's directory, the parent of the
// tools module's, in which testrun runs (tools/go.mod replaces the services'
// module with ../).
func repositoryRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull || filepath.Base(filepath.Dir(gomod)) != toolsDir {
		return "", fmt.Errorf("run testrun in the tools module (go -C tools run ./testrun), not in %q", gomod)
	}
	return filepath.Dir(filepath.Dir(gomod)), nil
}

// toolsDir is the tools module's directory, in the repository root.
const toolsDir = "tools"

// module is one of the repository's Go modules and the packages of the run
// that it holds.
type module struct {
	dir      string
	packages []string // patterns relative to dir
}

// plan splits args into go test's flags and the packages, which are the
// arguments that start with ./ (or are .), named from the repository root
// root, and gives each package to the module that holds it: ./tools/… to the
// tools module, the rest to the services'. ./..., and no package at all,
// name every package of both. A flag's value that starts with ./ must be
// joined to it (-coverprofile=./c.out).
func plan(args []string, root string) (flags []string, modules []module, err error) {
	services := module{dir: root}
	tools := module{dir: filepath.Join(root, toolsDir)}
	var named bool
	for _, a := range args {
		if a != "." && !strings.HasPrefix(a, "./") {
			flags = append(flags, a)
			continue
		}
		named = true
		switch p := path.Clean(a); {
		case strings.HasPrefix(p, "../") || p == "..":
			return nil, nil, fmt.Errorf("%s is outside the repository: name packages from its root", a)
		case p == "...":
			services.packages = append(services.packages, "./...")
			tools.packages = append(tools.packages, "./...")
		case p == toolsDir || strings.HasPrefix(p, toolsDir+"/"):
			tools.packages = append(tools.packages, relative(strings.TrimPrefix(strings.TrimPrefix(p, toolsDir), "/")))
		default:
			services.packages = append(services.packages, relative(p))
		}
	}
	if !named {
		services.packages, tools.packages = []string{"./..."}, []string{"./..."}
	}
	for _, m := range []module{services, tools} {
		if len(m.packages) > 0 {
			modules = append(modules, m)
		}
	}
	return flags, modules, nil
}

// relative is the package pattern of the cleaned path p, relative to its
// module's directory.
func relative(p string) string {
	if p == "" || p == "." {
		return "."
	}
	return "./" + p
}

// verdict is testrun's exit code and, when it fails the run, why: go test
// failed, no test ran, or, with CI set, a test was skipped, other than the
// skips CI expects (expectedSkips).
func verdict(sum summary, goErr error, ci bool) (code int, why string) {
	switch {
	case goErr != nil || sum.failed > 0:
		return 1, fmt.Sprintf("go test failed (%v)", goErr)
	case sum.total() == 0:
		return 1, "no test ran"
	case ci && sum.skipped > sum.expected:
		return 1, "CI is set, and in CI a skipped test fails the run: CI must never go green by skipping"
	default:
		return 0, ""
	}
}

// startServers starts a Postgres and a LocalStack container for the run when
// their variable is unset, and returns the environment that points the tests
// at them and a function that removes them. When one cannot start it says
// why, once; the tests then skip, each saying why too, except under CI, where
// it returns the reason: CI must never go green by skipping.
func startServers(ctx context.Context, getenv func(string) string, out io.Writer) (env []string, stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	ci := getenv("CI") != ""
	sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if getenv("DATABASE_URL") == "" {
		fmt.Fprintln(out, "testrun: DATABASE_URL is unset: starting one Postgres container for the run")
		u, s, err := pgtest.StartServer(sctx)
		switch {
		case err != nil && ci:
			return nil, stop, fmt.Errorf("CI is set, DATABASE_URL is unset, and no Postgres container: %w", err)
		case err != nil:
			fmt.Fprintf(out, "testrun: no Postgres: %v\n", err)
		default:
			stops = append(stops, s)
			env = append(env, "DATABASE_URL="+u)
		}
	}
	if getenv("AWS_ENDPOINT_URL") == "" {
		fmt.Fprintln(out, "testrun: AWS_ENDPOINT_URL is unset: starting one LocalStack container for the run")
		ep, s, err := awstest.StartServer(sctx)
		switch {
		case err != nil && ci:
			return nil, stop, fmt.Errorf("CI is set, AWS_ENDPOINT_URL is unset, and no LocalStack container: %w", err)
		case err != nil:
			fmt.Fprintf(out, "testrun: no LocalStack: %v\n", err)
		default:
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
	return env, stop, nil
}
