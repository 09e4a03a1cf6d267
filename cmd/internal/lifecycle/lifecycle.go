// Package lifecycle is the start-up and shutdown skeleton every service
// share, so that each command's main.go holds only its own wiring: main and
// the one place a process exits (Main), the -h convention (Run), the logger,
// the migrations at start-up, the Prometheus registry, and the two HTTP
// listeners — the API's and the operational endpoints' — served by an
// errgroup and shut down together when the context ends (Servers).
package lifecycle

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/adapters/postgres"
)

// Main runs run with the process's arguments, environment and stdout, and a
// context that SIGINT or SIGTERM cancels. It is the one place a service
// exits: status 1, with "name: err" on stderr, when run fails.
func Main(name string, run func(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// Run returns what a command's dispatch returned, except flag.ErrHelp: -h
// or --help printed the command's usage, as asked, which is a success.
func Run(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// NewLogger is a service's one logger, JSON on out. Every line logged with a
// request's context carries the request's id (httpserver.LogRequestIDs), the
// one its answer's X-Request-Id gave the client.
func NewLogger(out io.Writer, level slog.Level, service string) *slog.Logger {
	return slog.New(httpserver.LogRequestIDs(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: level}))).With("service", service)
}

// Migrate applies the service's embedded migrations in fsys and logs how many
// it applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS, log *slog.Logger) error {
	res, err := postgres.Migrate(ctx, pool, fsys)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "migrations applied", "count", len(res))
	return nil
}

// NewRegistry is a service's Prometheus registry, with the Go runtime's and
// the process's collectors: no global registry, so tests can run services
// side by side.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// NewServer is an http.Server with the timeouts every listener needs.
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      15 * time.Second,
		IdleTimeout:       60 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// Addrs are the addresses a service listens on, once listening: the API's
// and the operational endpoints'. Tests read them to reach a service started
// on :0.
type Addrs struct{ API, Ops string }

// Servers are a service's listeners: the API (HTTP_ADDR) and the
// operational endpoints (OPS_ADDR), which never face clients; a process with
// no API (`ledger inbox process`) has the ops listener alone.
type Servers struct {
	api, ops     *http.Server // api nil: no API listener
	apiLn, opsLn net.Listener
}

// Listen listens on apiAddr and opsAddr for api and ops; an error names the
// variable whose address failed.
func Listen(apiAddr, opsAddr string, api, ops http.Handler, log *slog.Logger) (*Servers, error) {
	apiLn, err := net.Listen("tcp", apiAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on HTTP_ADDR %s: %w", apiAddr, err)
	}
	opsLn, err := net.Listen("tcp", opsAddr)
	if err != nil {
		apiLn.Close()
		return nil, fmt.Errorf("listen on OPS_ADDR %s: %w", opsAddr, err)
	}
	return &Servers{api: NewServer(api, log), ops: NewServer(ops, log), apiLn: apiLn, opsLn: opsLn}, nil
}

// ListenOps listens on opsAddr for ops alone: a process that serves no API.
func ListenOps(opsAddr string, ops http.Handler, log *slog.Logger) (*Servers, error) {
	opsLn, err := net.Listen("tcp", opsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on OPS_ADDR %s: %w", opsAddr, err)
	}
	return &Servers{ops: NewServer(ops, log), opsLn: opsLn}, nil
}

// Addrs returns the addresses listened on; API is "" without an API.
func (s *Servers) Addrs() Addrs {
	a := Addrs{Ops: s.opsLn.Addr().String()}
	if s.apiLn != nil {
		a.API = s.apiLn.Addr().String()
	}
	return a
}

// Serve serves both listeners in g until ctx ends (a signal arrived, or
// another of g's goroutines failed), then calls shuttingDown and shuts both
// down within timeout: requests in flight finish, their transactions commit
// or roll back. The ops listener stops with the API, not before, so the
// orchestrator sees the replica until it is gone.
func (s *Servers) Serve(ctx context.Context, g *errgroup.Group, timeout time.Duration, shuttingDown func()) {
	for _, srv := range []struct {
		srv *http.Server
		ln  net.Listener
	}{{s.api, s.apiLn}, {s.ops, s.opsLn}} {
		if srv.srv == nil {
			continue
		}
		g.Go(func() error {
			if err := srv.srv.Serve(srv.ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	g.Go(func() error {
		<-ctx.Done()
		shuttingDown()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		var apiErr error
		if s.api != nil {
			apiErr = s.api.Shutdown(sctx)
		}
		return errors.Join(apiErr, s.ops.Shutdown(sctx))
	})
}
