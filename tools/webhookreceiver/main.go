// Command webhookreceiver is the demo's merchant endpoint: it serves
// POST /webhooks, verifies each delivery of the webhooks service with the
// Standard Webhooks reference library, and logs one JSON line per webhook
// with its webhook-id, its event type and whether it verified. It answers
// 204 to a delivery whose signature verifies and 400 to any other, so the
// webhooks service's retries, parking and deliveries list can be watched
// against a receiver that checks what a real one must.
//
//	webhookreceiver [-addr 127.0.0.1:8083]
//	webhookreceiver -healthcheck [-addr 127.0.0.1:8083]   # exit 0 when it serves
//
// The signing secrets (whsec_…, as POST /webhook_endpoints answers them)
// come from two places, and a delivery verifies when any of them signs it:
//
//   - WEBHOOKS_RECEIVER_SECRET, read once at start;
//   - the file WEBHOOKS_RECEIVER_SECRETS_FILE names, if set: one secret a
//     line (blank lines and lines starting with # ignored), re-read on every
//     request, so that the secret an endpoint's registration answers can be
//     handed to a running receiver (docker-compose.yml mounts the file)
//     without a restart, and a rotated secret can stand beside the old one.
//
// No secret yet is no error: the receiver serves and answers 400 until one
// arrives. The answer and the log say why no secret verified: none
// configured, the file missing, unreadable (permission denied: the image
// runs as uid 65532, to which a host's file must be readable), empty, or a
// line that holds no usable secret. Secrets are never logged. SIGTERM stops
// it gracefully: the deliveries in flight are answered first.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"golang.org/x/sync/errgroup"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhookreceiver:", err)
		os.Exit(1)
	}
}

// maxBody bounds what one delivery may send; the webhooks service's events
// are a few KiB.
const maxBody = 1 << 20

// shutdownTimeout is how long SIGTERM waits for the deliveries in flight.
const shutdownTimeout = 10 * time.Second

func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	fs := flag.NewFlagSet("webhookreceiver", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("addr", "127.0.0.1:8083", "listen address (loopback unless told otherwise; its container says 0.0.0.0:8083)")
	healthcheck := fs.Bool("healthcheck", false, "ask a running receiver on -addr for /healthz and exit 0 if it answers 200")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *healthcheck {
		return checkHealth(ctx, *addr)
	}
	secrets, err := newSecrets(getenv("WEBHOOKS_RECEIVER_SECRET"), getenv("WEBHOOKS_RECEIVER_SECRETS_FILE"))
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(out, nil))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newHandler(secrets, log), ReadHeaderTimeout: 5 * time.Second}
	log.Info("webhook receiver listening", "addr", ln.Addr().String(), "path", "/webhooks")
	// Said once at start too, so that a file the receiver may not read
	// shows before the first delivery fails on it.
	if list, problems := secrets.current(); len(list) == 0 || len(problems) > 0 {
		log.Warn("no usable secret yet", "why", strings.Join(problems, "; "))
	}

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	err = g.Wait()
	log.Info("webhook receiver stopped")
	return err
}

// secrets are the receiver's signing secrets: the one of the environment,
// and those of the file, read anew on each call.
type secrets struct {
	fixed []string
	file  string
	// readFile is os.ReadFile; a test swaps it to see a permission denied
	// that root, which CI runs as, never gets.
	readFile func(string) ([]byte, error)
}

func newSecrets(env, file string) (*secrets, error) {
	s := &secrets{file: file, readFile: os.ReadFile}
	if env = strings.TrimSpace(env); env != "" {
		if err := checkSecret(env); err != nil {
			return nil, fmt.Errorf("WEBHOOKS_RECEIVER_SECRET: %w", err)
		}
		s.fixed = []string{env}
	}
	return s, nil
}

// checkSecret refuses what the reference library cannot use as a key. Its
// error never holds the secret.
func checkSecret(secret string) error {
	if !strings.HasPrefix(secret, "whsec_") {
		return errors.New("want a whsec_… secret")
	}
	if _, err := standardwebhooks.NewWebhook(secret); err != nil {
		return errors.New("want whsec_ followed by base64")
	}
	return nil
}

// current returns the secrets to verify with now, and problems: what keeps
// the file from holding a usable secret, each naming the file (and line),
// never a secret's content. A missing or empty file is a problem only while
// it leaves the receiver without any secret: the file is where the next one
// will arrive.
func (s *secrets) current() (list []string, problems []string) {
	list = append(list, s.fixed...)
	if s.file == "" {
		if len(list) == 0 {
			problems = append(problems, "no secret configured: set WEBHOOKS_RECEIVER_SECRET or WEBHOOKS_RECEIVER_SECRETS_FILE")
		}
		return list, problems
	}
	b, err := s.readFile(s.file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if len(list) == 0 {
			problems = append(problems, fmt.Sprintf("%s does not exist: write the whsec_… secret that registering the endpoint answered to it", s.file))
		}
		return list, problems
	case errors.Is(err, os.ErrPermission):
		return list, append(problems, fmt.Sprintf("%s: permission denied: the receiver runs as uid %d, which may not read it (the file needs o+r, its directory o+x)", s.file, os.Getuid()))
	case err != nil:
		return list, append(problems, err.Error())
	}
	found := false
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		found = true
		if err := checkSecret(line); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %v", s.file, i+1, err))
			continue
		}
		list = append(list, line)
	}
	if !found && len(list) == 0 {
		problems = append(problems, fmt.Sprintf("%s is empty: write the whsec_… secret that registering the endpoint answered to it", s.file))
	}
	return list, problems
}

func newHandler(s *secrets, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("POST /webhooks", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			log.WarnContext(r.Context(), "webhook", "webhook-id", r.Header.Get(standardwebhooks.HeaderWebhookID), "verified", false, "reason", "body: "+err.Error())
			problem(w, "the body could not be read or is over 1 MiB")
			return
		}
		list, problems := s.current()
		for _, p := range problems {
			log.ErrorContext(r.Context(), "no usable secret", "why", p)
		}
		reason := "no usable secret: " + strings.Join(problems, "; ")
		verified := false
		for _, secret := range list {
			wh, err := standardwebhooks.NewWebhook(secret)
			if err != nil {
				continue // checked by current
			}
			if err = wh.Verify(body, r.Header); err == nil {
				verified = true
				break
			}
			reason = err.Error()
		}
		attrs := []any{"webhook-id", r.Header.Get(standardwebhooks.HeaderWebhookID), "type", eventType(body), "verified", verified}
		if !verified {
			log.WarnContext(r.Context(), "webhook", append(attrs, "reason", reason)...)
			problem(w, "the webhook-signature does not verify: "+reason)
			return
		}
		log.InfoContext(r.Context(), "webhook", attrs...)
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// eventType is the CloudEvent's type, or "" when the body is not one.
func eventType(body []byte) string {
	var e struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Type
}

func problem(w http.ResponseWriter, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": "Bad Request", "status": http.StatusBadRequest, "detail": detail})
}

// checkHealth asks the receiver on addr (":8083" means this host) for
// /healthz: the container's healthcheck, as the image has no curl.
func checkHealth(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: %s", res.Status)
	}
	return nil
}
