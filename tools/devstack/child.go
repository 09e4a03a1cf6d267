package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// child is a process make dev started and stops: a server, moto, a service.
type child struct {
	name  string
	cmd   *exec.Cmd
	log   string
	done  chan struct{}
	err   error          // how it ended, once done is closed
	stop  syscall.Signal // what asks it to stop: SIGTERM, Postgres' SIGINT (fast shutdown)
	grace time.Duration  // then SIGKILL
}

// startChild starts cmd as name with its output in log (truncated: each
// make dev starts afresh). The child gets a process group of its own, so
// that the terminal's Ctrl-C reaches make dev alone, which then stops the
// children in order (services before the servers they use); and it dies
// with make dev if make dev is killed outright.
func startChild(name string, cmd *exec.Cmd, log string, stop syscall.Signal, grace time.Duration, cred *syscall.Credential) (*child, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: log, done: make(chan struct{}), stop: stop, grace: grace}
	go func() {
		c.err = cmd.Wait()
		f.Close()
		close(c.done)
	}()
	return c, nil
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// halt asks the child to stop, waits up to its grace, then kills its whole
// process group; it returns how the child ended when that was not a clean
// exit after the signal.
func (c *child) halt() error {
	if c.exited() {
		return fmt.Errorf("%s had exited already (%v); see %s", c.name, c.err, c.log)
	}
	_ = c.cmd.Process.Signal(c.stop)
	select {
	case <-c.done:
	case <-time.After(c.grace):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
		return fmt.Errorf("%s did not stop within %s; killed", c.name, c.grace)
	}
	// Whatever it left in its group (a Postgres backend, a shim's child).
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	if c.err != nil {
		var exit *exec.ExitError
		if errors.As(c.err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() && exit.Sys().(syscall.WaitStatus).Signal() == c.stop {
			return nil // ended by the signal it was sent: moto does so
		}
		return fmt.Errorf("%s: %v after %s; see %s", c.name, c.err, c.stop, c.log)
	}
	return nil
}

// tail is the last n lines of the child's log.
func (c *child) tail(n int) string {
	b, err := os.ReadFile(c.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitReady polls ready until it returns nil, and fails early, with the
// log's last lines, when the child exits first.
func (c *child) waitReady(ctx context.Context, timeout time.Duration, ready func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s exited while starting (%v); the end of %s:\n%s", c.name, c.err, c.log, c.tail(20))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond): // polling a server that is starting
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s (%v); the end of %s:\n%s", c.name, timeout, err, c.log, c.tail(20))
		}
	}
}

// httpOK is a readiness check: GET url answers 200.
func httpOK(url string) func(context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	return func(ctx context.Context) error {
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
			return fmt.Errorf("GET %s: %s", url, res.Status)
		}
		return nil
	}
}
