package lifecycle_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/cmd/internal/envconfig"
	"github.com/payments-outbox/payments-outbox/cmd/internal/lifecycle"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

func TestRunTakesHelpForASuccess(t *testing.T) {
	boom := errors.New("boom")
	for err, want := range map[error]error{nil: nil, flag.ErrHelp: nil, fmt.Errorf("outbox: %w", flag.ErrHelp): nil, boom: boom} {
		if got := lifecycle.Run(err); !errors.Is(got, want) || (want == nil && got != nil) {
			t.Errorf("Run(%v) = %v, want %v", err, got, want)
		}
	}
}

// TestListenNamesTheVariable: a port already taken fails start-up with the
// variable to fix, and nothing is left listening.
func TestListenNamesTheVariable(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	log := logtest.Discard()
	for name, addrs := range map[string][2]string{
		"HTTP_ADDR": {taken.Addr().String(), "127.0.0.1:0"},
		"OPS_ADDR":  {"127.0.0.1:0", taken.Addr().String()},
	} {
		if _, err := lifecycle.Listen(addrs[0], addrs[1], http.NotFoundHandler(), http.NotFoundHandler(), log); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s taken: got %v, want an error naming %s", name, err, name)
		}
	}
}

// TestServeStopsBothListenersWhenTheContextEnds: both listeners answer
// until the context ends, then both are shut down and g returns.
func TestServeStopsBothListenersWhenTheContextEnds(t *testing.T) {
	log := logtest.Discard()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	s, err := lifecycle.Listen("127.0.0.1:0", "127.0.0.1:0", ok, ok, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g, gctx := errgroup.WithContext(ctx)
	stopped := make(chan struct{})
	s.Serve(gctx, g, 5*time.Second, func() { close(stopped) })
	for _, addr := range []string{s.Addrs().API, s.Addrs().Ops} {
		resp, err := http.Get("http://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	select {
	case <-stopped:
	default:
		t.Error("shuttingDown was not called")
	}
	if _, err := http.Get("http://" + s.Addrs().API); err == nil {
		t.Error("the API still answers after the shutdown")
	}
}

func TestReadCommonRefusesOneAddressForBoth(t *testing.T) {
	getenv := func(name string) string {
		return map[string]string{"DATABASE_URL": "postgres://x", "HTTP_ADDR": ":8080", "OPS_ADDR": ":8080"}[name]
	}
	e := envconfig.New(getenv)
	lifecycle.ReadCommon(e, getenv, ":8080", ":9090")
	if err := e.Err(); err == nil || !strings.Contains(err.Error(), "OPS_ADDR must differ") {
		t.Errorf("got %v, want OPS_ADDR refused", err)
	}
}

// TestListenOpsServesTheOpsListenerAlone: a process without an API has no
// API address, and its ops listener stops when the context ends.
func TestListenOpsServesTheOpsListenerAlone(t *testing.T) {
	s, err := lifecycle.ListenOps("127.0.0.1:0", http.NotFoundHandler(), logtest.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if a := s.Addrs(); a.API != "" || a.Ops == "" {
		t.Fatalf("Addrs = %+v, want only Ops", a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g, gctx := errgroup.WithContext(ctx)
	s.Serve(gctx, g, 5*time.Second, func() {})
	resp, err := http.Get("http://" + s.Addrs().Ops)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
