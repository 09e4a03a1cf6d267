package httpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
)

// lockedBuffer is a log destination a server and its test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the JSON log lines written so far, each with its raw text.
func (l *lockedBuffer) lines(t *testing.T) []logLine {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logLine
	for _, raw := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		if raw == "" {
			continue
		}
		var line logLine
		if err := json.Unmarshal([]byte(raw), &line); err != nil {
			t.Fatalf("log line %s: %v", raw, err)
		}
		line.raw = raw
		out = append(out, line)
	}
	return out
}

type logLine struct {
	Msg       string `json:"msg"`
	RequestID string `json:"request_id"`
	raw       string
}

// TestRequestIDIsSafeToKeep: a client's X-Request-Id is kept only if short
// and of a safe alphabet, else replaced by a random UUIDv7, in the answer
// and in the logs alike; a replaced id is never written anywhere.
func TestRequestIDIsSafeToKeep(t *testing.T) {
	logs := &lockedBuffer{}
	h := httpserver.NewOpsRouter(nil, slog.New(slog.NewJSONHandler(logs, nil)), nil, httpserver.OpsConfig{})
	srv := httptest.NewServer(apitest.New(t, apidoc.Ops()).Handler(t, h))
	t.Cleanup(srv.Close)

	tests := []struct {
		name string
		sent []string // the X-Request-Id headers sent
		kept bool
	}{
		{"none", nil, false},
		{"safe", []string{"client-42_a.B"}, true},
		{"64 characters", []string{strings.Repeat("a", 64)}, true},
		{"65 characters", []string{strings.Repeat("a", 65)}, false},
		{"100 KB", []string{strings.Repeat("x", 100<<10)}, false},
		{"a space", []string{"a b"}, false},
		{"a quote", []string{`a"b`}, false},
		{"non-ASCII", []string{"ié"}, false},
		{"a slash, as chi's ids have", []string{"host/abc-000001"}, false},
		{"two headers", []string{"a", "b"}, false},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/healthz", nil)
			for _, v := range tt.sent {
				req.Header.Add(httpserver.RequestIDHeader, v)
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			got := res.Header.Values(httpserver.RequestIDHeader)
			if len(got) != 1 {
				t.Fatalf("answered X-Request-Id %q, want one", got)
			}
			id := got[0]
			if tt.kept {
				if id != tt.sent[0] {
					t.Errorf("answered %q, want the client's %q kept", id, tt.sent[0])
				}
				return
			}
			u, err := uuid.Parse(id)
			if err != nil || u.Version() != 7 || len(id) != 36 {
				t.Errorf("answered %q, want a new UUIDv7", id)
			}
			if seen[id] {
				t.Errorf("id %s made twice", id)
			}
			seen[id] = true
		})
	}

	for _, line := range logs.lines(t) {
		if len(line.raw) > 1024 {
			t.Errorf("a log line of %d bytes: a client's id reached the logs", len(line.raw))
		}
		if line.RequestID == "" {
			t.Errorf("log line without request_id: %s", line.raw)
		}
	}
}

// TestEveryLogLineOfARequestCarriesItsID: the access log, a 500's cause, a
// panic and the application's own lines logged with the request's context
// all carry the id the answer gave, once; a line outside a request has none.
func TestEveryLogLineOfARequestCarriesItsID(t *testing.T) {
	logs := &lockedBuffer{}
	plain := slog.New(slog.NewJSONHandler(logs, nil))                                              // as a test or a fork might wire it
	app := slog.New(httpserver.LogRequestIDs(slog.NewJSONHandler(logs, nil))).With("service", "x") // as cmd wires it
	r := httpserver.NewRouter(plain, nil, httpserver.Config{})
	r.Get("/app", func(w http.ResponseWriter, r *http.Request) {
		app.InfoContext(r.Context(), "application line")
		w.WriteHeader(http.StatusNoContent)
	})
	r.Get("/fail", func(w http.ResponseWriter, r *http.Request) {
		httpserver.WriteError(w, r, plain, errors.New("constraint violated"))
	})
	r.Get("/panic", func(http.ResponseWriter, *http.Request) { panic("boom") })

	for _, path := range []string{"/app", "/fail", "/panic"} {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set(httpserver.RequestIDHeader, "req"+strings.ReplaceAll(path, "/", "-"))
		r.ServeHTTP(w, req)
		if got := w.Header().Get(httpserver.RequestIDHeader); got != "req"+strings.ReplaceAll(path, "/", "-") {
			t.Errorf("%s answered X-Request-Id %q", path, got)
		}
	}
	app.InfoContext(context.Background(), "outside a request")

	want := map[string]string{
		"application line":  "req-app",
		"request failed":    "req-fail",
		"handler panic":     "req-panic",
		"outside a request": "",
	}
	accessLines := 0
	for _, line := range logs.lines(t) {
		if n := strings.Count(line.raw, `"request_id"`); n > 1 {
			t.Errorf("request_id written %d times: %s", n, line.raw)
		}
		if line.Msg == "http request" {
			accessLines++
			if !strings.HasPrefix(line.RequestID, "req-") {
				t.Errorf("access line without the request's id: %s", line.raw)
			}
			continue
		}
		id, ok := want[line.Msg]
		if !ok {
			t.Errorf("unexpected line %s", line.raw)
			continue
		}
		delete(want, line.Msg)
		if line.RequestID != id {
			t.Errorf("%q logged with request_id %q, want %q: %s", line.Msg, line.RequestID, id, line.raw)
		}
	}
	if accessLines != 3 || len(want) != 0 {
		t.Errorf("%d access lines, want 3; lines never logged: %v", accessLines, want)
	}
}
