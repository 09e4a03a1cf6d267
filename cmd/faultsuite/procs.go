package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// buildBinaries compiles the real payments and ledger commands into dir.
func buildBinaries(ctx context.Context, dir string) (payments, ledger string, err error) {
	const module = "github.com/payments-outbox/payments-outbox/cmd/"
	for _, name := range []string{"payments", "ledger"} {
		out := filepath.Join(dir, name)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, module+name)
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("go build %s: %w\n%s", name, err, b)
		}
	}
	return filepath.Join(dir, "payments"), filepath.Join(dir, "ledger"), nil
}

// proc is one service replica run as a subprocess on a fixed address, so a
// restart comes back where the clients look for it.
type proc struct {
	name string
	bin  string
	env  []string
	addr string
	logs string // file that collects stdout and stderr of every incarnation

	gen  int // incarnation, bumped by each start
	cmd  *exec.Cmd
	done chan struct{}
}

func newProc(name, bin, logDir string, env map[string]string) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	env["HTTP_ADDR"] = addr
	p := &proc{name: name, bin: bin, addr: addr, logs: filepath.Join(logDir, name+".log")}
	p.env = os.Environ()
	for k, v := range env {
		p.env = append(p.env, k+"="+v)
	}
	return p, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// start launches a new incarnation and waits until its /readyz answers 200.
func (p *proc) start(ctx context.Context) error {
	f, err := os.OpenFile(p.logs, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p.gen++
	fmt.Fprintf(f, "=== %s incarnation %d at %s\n", p.name, p.gen, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = f, f
	// Die with the suite, even when it is killed (a test timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return p.waitReady(ctx)
}

func (p *proc) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+"/readyz", nil)
		if res, err := client.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited during start-up; see %s:\n%s", p.name, p.logs, tail(p.logs, 20))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after 60s; see %s:\n%s", p.name, p.logs, tail(p.logs, 20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// alive reports whether the current incarnation is running.
func (p *proc) alive() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL: no shutdown hook runs, in-flight work is cut mid-way.
func (p *proc) kill() {
	if !p.alive() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop asks for a graceful shutdown and kills after a grace period.
func (p *proc) stop() {
	if !p.alive() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.kill()
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
