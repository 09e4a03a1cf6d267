package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// build compiles one of the repository's commands (./cmd/name) into dir, so
// the benchmark runs the real binary and not a test harness around it.
func build(ctx context.Context, dir, name string) (string, error) {
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/"+name)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/%s (run loadgen from the repository root): %w", name, err)
	}
	return bin, nil
}

// service is a started binary of this repository.
type service struct {
	name string
	addr string // host:port of its HTTP server
	log  string // file with its stdout and stderr
	cmd  *exec.Cmd
	done chan error
}

// startService runs bin with the current environment plus env (later
// entries win), on a free loopback port, and waits until /readyz answers 200.
func startService(ctx context.Context, dir, bin string, env []string) (*service, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	name := filepath.Base(bin)
	s := &service{name: name, addr: fmt.Sprintf("127.0.0.1:%d", port), log: filepath.Join(dir, name+".log"), done: make(chan error, 1)}
	out, err := os.Create(s.log)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin)
	s.cmd.Env = append(append(os.Environ(), env...), "HTTP_ADDR="+s.addr)
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if err := s.cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		s.done <- s.cmd.Wait()
		out.Close()
	}()

	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := ready(ctx, s.addr); err == nil {
			return s, nil
		} else if time.Now().After(deadline) {
			_ = s.stop()
			return nil, fmt.Errorf("%s not ready after 60s (%v); see %s", name, err, s.log)
		}
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("%s exited before it was ready (%v); see %s", name, err, s.log)
		case <-ctx.Done():
			_ = s.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func ready(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s", res.Status)
	}
	return nil
}

// stop sends SIGTERM, as an orchestrator would, and kills the process if it
// has not exited after 20 seconds.
func (s *service) stop() error {
	if s.cmd.Process == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("%s: %w; see %s", s.name, err, s.log)
		}
		return nil
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("%s did not stop within 20s of SIGTERM; killed", s.name)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// cpuTime is the user+system CPU time the process has used so far, from
// /proc (Linux); zero elsewhere. Divided by the requests served it gives a
// cost per request that, unlike throughput, does not drift with whatever
// else runs on a shared machine.
func (s *service) cpuTime() time.Duration {
	if s == nil || s.cmd.Process == nil {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
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
