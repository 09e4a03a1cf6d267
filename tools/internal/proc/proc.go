package proc

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// readyTimeout bounds a start-up, which may apply migrations first.
	readyTimeout = 60 * time.Second
	// stopGrace is how long a SIGTERMed process may take to exit before it is
	// killed: longer than the services' default SHUTDOWN_TIMEOUT (15s).
	stopGrace = 20 * time.Second
)

// services is the services' module, which the tools module requires and
// replaces with this checkout (tools/go.mod).
const services = "github.com/payments-outbox/payments-outbox"

// Build compiles the services' command cmd/<name> into dir and returns the
// binary's path. It compiles in the services' own module, against its go.mod
// alone (GOWORK=off), so that the binary is the one the Dockerfile builds, not
// one linked with the versions the tools module's heavier dependencies pick.
// It finds that module through the go command, so it works from any
// directory of either module (a test runs in its own package's directory).
func Build(ctx context.Context, dir, name string) (string, error) {
	bin, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", services).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", services, err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/"+name)
	cmd.Dir = strings.TrimSpace(string(out))
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/%s: %w\n%s", name, err, out)
	}
	return bin, nil
}

// Process is a binary run as a subprocess on a fixed loopback address, so
// that after a restart it comes back where its clients look for it. Alive,
// Gen and CPUTime may be called while another goroutine starts, stops or
// kills it. A nil *Process never runs: Alive is false, CPUTime is zero, and
// Stop and Kill do nothing.
type Process struct {
	name string
	bin  string
	env  []string // ends with HTTP_ADDR=addr, OPS_ADDR=ops
	addr string
	ops  string
	log  string

	mu  sync.Mutex
	gen int
	cur *incarnation // nil before the first Start
}

// incarnation is one run of the binary, from Start until it exits.
type incarnation struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and err is set
	err  error         // what Wait returned
}

// New prepares bin to run as name with env, a complete environment as in
// exec.Cmd.Env (pass os.Environ() to inherit), to which it adds HTTP_ADDR and
// OPS_ADDR, each on a free loopback port. Every incarnation appends its
// stdout and stderr to the file log. Nothing runs until Start.
func New(name, bin, log string, env []string) (*Process, error) {
	addrs, err := FreeAddrs(2)
	if err != nil {
		return nil, err
	}
	addr, ops := addrs[0], addrs[1]
	// Clip, so that appending cannot write into the caller's array; exec
	// uses the last value of a repeated variable, so these win.
	env = append(slices.Clip(env), "HTTP_ADDR="+addr, "OPS_ADDR="+ops)
	return &Process{name: name, bin: bin, env: env, addr: addr, ops: ops, log: log}, nil
}

// Name is the name given to New; it labels errors and log lines.
func (p *Process) Name() string { return p.name }

// Addr is the host:port the process serves its API on, the same for every
// incarnation.
func (p *Process) Addr() string { return p.addr }

// OpsAddr is the host:port of its operational endpoints (/readyz,
// /metrics), the same for every incarnation.
func (p *Process) OpsAddr() string { return p.ops }

// Log is the path of the file that collects the output of every incarnation.
func (p *Process) Log() string { return p.log }

// Gen numbers the incarnations: 1 after the first Start, 2 after a restart,
// and so on, so that a caller can tell one incarnation's counters from the
// next one's.
func (p *Process) Gen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gen
}

func (p *Process) current() *incarnation {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

func (inc *incarnation) running() bool {
	if inc == nil {
		return false
	}
	select {
	case <-inc.done:
		return false
	default:
		return true
	}
}

// Start launches a new incarnation, the first or a restart after Stop or
// Kill, and waits until GET /readyz answers 200. It fails early, with the
// log's last lines, if the process exits first, and after 60 seconds; then
// it stops the process, so that on error nothing is left running.
func (p *Process) Start(ctx context.Context) error {
	if p.Alive() {
		return fmt.Errorf("start %s: already running", p.name)
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	gen := p.Gen() + 1
	fmt.Fprintf(f, "=== %s incarnation %d at %s\n", p.name, gen, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	inc := &incarnation{cmd: cmd, done: make(chan struct{})}
	go func() {
		inc.err = cmd.Wait()
		f.Close()
		close(inc.done)
	}()
	p.mu.Lock()
	p.gen, p.cur = gen, inc
	p.mu.Unlock()

	if err := p.waitReady(ctx, inc); err != nil {
		_ = p.Stop()
		return err
	}
	return nil
}

func (p *Process) waitReady(ctx context.Context, inc *incarnation) error {
	timeout := time.NewTimer(readyTimeout)
	defer timeout.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		err := get(ctx, client, "http://"+p.ops+"/readyz")
		if err == nil {
			return nil
		}
		select {
		case <-inc.done:
			return fmt.Errorf("%s exited during start-up (%v); see %s:\n%s", p.name, inc.err, p.log, p.Tail(20))
		case <-timeout.C:
			return fmt.Errorf("%s not ready after %s (%v); see %s:\n%s", p.name, readyTimeout, err, p.log, p.Tail(20))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w", p.name, ctx.Err())
		case <-time.After(50 * time.Millisecond): // polling a server that is starting up
		}
	}
}

func get(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz answered %s", res.Status)
	}
	return nil
}

// Alive reports whether the current incarnation is running.
func (p *Process) Alive() bool { return p.current().running() }

// Stop sends SIGTERM, as an orchestrator would, waits for the process to
// exit, and kills it if it is still running 20 seconds later. It returns nil
// if nothing was running or the process exited cleanly; otherwise an error
// that says how it ended, so that a caller can require a graceful shutdown.
func (p *Process) Stop() error {
	inc := p.current()
	if !inc.running() {
		return nil
	}
	_ = inc.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-inc.done:
		if inc.err != nil {
			return fmt.Errorf("%s: %w after SIGTERM; see %s", p.name, inc.err, p.log)
		}
		return nil
	case <-time.After(stopGrace):
		_ = inc.cmd.Process.Kill()
		<-inc.done
		return fmt.Errorf("%s did not stop within %s of SIGTERM; killed", p.name, stopGrace)
	}
}

// Kill sends SIGKILL and waits for the process to exit. No shutdown hook
// runs: in-flight work is cut mid-way, as in a crash or an OOM kill.
func (p *Process) Kill() {
	inc := p.current()
	if !inc.running() {
		return
	}
	_ = inc.cmd.Process.Kill()
	<-inc.done
}

// Tail returns the last n lines of the log, or why it cannot be read.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// CPUTime is the user+system CPU time the running incarnation has used so
// far, read from /proc (Linux); zero elsewhere and when nothing runs. Divided
// by the requests served it gives a cost per request that, unlike
// throughput, does not drift with whatever else runs on a shared machine.
func (p *Process) CPUTime() time.Duration {
	inc := p.current()
	if !inc.running() {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", inc.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces, so skip past
	// its closing parenthesis): state is field 3, utime 14, stime 15.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const clockTicks = 100 // USER_HZ, 100 on every Linux architecture Go supports
	return time.Duration(utime+stime) * time.Second / clockTicks
}
