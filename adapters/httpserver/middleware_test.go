package httpserver_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// TestClientsCannotGrowTheMetrics: invented methods and paths, as many as a
// client likes, add no series to the HTTP metrics (each would be kept, and
// scraped, for the life of the process), and a 405 does not echo the method.
func TestClientsCannotGrowTheMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := httpserver.NewOpsRouter(nil, logtest.Discard(), httpserver.NewMetrics(reg), httpserver.OpsConfig{Gatherer: reg})
	srv := httptest.NewServer(apitest.New(t, apidoc.Ops()).Handler(t, h))
	t.Cleanup(srv.Close)

	rnd := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, 4+rnd.IntN(12))
		for i := range b {
			b[i] = byte('A' + rnd.IntN(26))
		}
		return string(b)
	}
	send := func(method, path string) string {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	echoed := 0
	for range 200 {
		method := word()
		if body := send(method, "/healthz"); strings.Contains(body, method) && echoed == 0 {
			echoed++
			t.Errorf("the 405 echoes the method %s: %s", method, body)
		}
		send(http.MethodGet, "/"+word())
		send(word(), "/"+word()+"/"+word())
	}

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "http_request") {
			continue
		}
		// At most: other/unmatched/405, GET/unmatched/404, other/unmatched/404.
		if n := len(f.GetMetric()); n > 3 {
			var labels []string
			for _, m := range f.GetMetric()[:5] {
				labels = append(labels, m.String())
			}
			t.Errorf("%s has %d series after 600 invented requests, want at most 3; e.g. %s", f.GetName(), n, strings.Join(labels, "; "))
		}
	series:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" && l.GetValue() != "other" && l.GetValue() != http.MethodGet {
					t.Errorf("%s has method %q, want other or GET", f.GetName(), l.GetValue())
					break series
				}
			}
		}
	}
}

// TestEveryAnswerIsNoSniffNoStore: whatever the route and the status, an
// answer tells browsers not to sniff its type and caches not to keep it.
func TestEveryAnswerIsNoSniffNoStore(t *testing.T) {
	reg := prometheus.NewRegistry()
	ops := httpserver.NewOpsRouter(func(context.Context) error { return errors.New("down") }, logtest.Discard(), httpserver.NewMetrics(reg), httpserver.OpsConfig{Gatherer: reg})
	srv := httptest.NewServer(apitest.New(t, apidoc.Ops()).Handler(t, ops))
	t.Cleanup(srv.Close)
	api := httpserver.NewRouter(logtest.Discard(), nil, httpserver.Config{OpenAPI: []byte("openapi: 3.1.0\n")})
	api.With(httpserver.RequireBearer(func(ctx context.Context, _ string) (context.Context, error) { return ctx, nil },
		func(w http.ResponseWriter, r *http.Request, err error) {
			httpserver.WriteError(w, r, logtest.Discard(), err)
		},
	)).Get("/private", func(w http.ResponseWriter, r *http.Request) {
		httpserver.WriteJSON(w, http.StatusOK, map[string]int{"amount": 1})
	})
	api.Get("/panic", func(http.ResponseWriter, *http.Request) { panic("boom") })
	apiSrv := httptest.NewServer(api)
	t.Cleanup(apiSrv.Close)

	for _, tt := range []struct {
		base, method, path string
		status             int
	}{
		{srv.URL, "GET", "/healthz", 200},
		{srv.URL, "GET", "/metrics", 200},
		{srv.URL, "GET", "/readyz", 503},
		{srv.URL, "GET", "/nope", 404},
		{srv.URL, "POST", "/healthz", 405},
		{apiSrv.URL, "GET", "/openapi.yaml", 200},
		{apiSrv.URL, "GET", "/private", 401},
		{apiSrv.URL, "GET", "/panic", 500},
	} {
		req, _ := http.NewRequest(tt.method, tt.base+tt.path, nil)
		if tt.path == "/private" {
			req.Header.Add("Authorization", "Bearer a")
			req.Header.Add("Authorization", "Bearer b")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tt.status {
			t.Errorf("%s %s: %d, want %d", tt.method, tt.path, res.StatusCode, tt.status)
		}
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s: X-Content-Type-Options %q, want nosniff", tt.method, tt.path, got)
		}
		if got := res.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s %s: Cache-Control %q, want no-store", tt.method, tt.path, got)
		}
	}
}
