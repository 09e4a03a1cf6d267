package httpserver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

func newOps(t *testing.T, ready error) *httptest.Server {
	reg := prometheus.NewRegistry()
	m := httpserver.NewMetrics(reg)
	h := httpserver.NewOpsRouter(func(context.Context) error { return ready }, logtest.Discard(), m, httpserver.OpsConfig{
		Status:   func() map[string]string { return map[string]string{"sns_topic": "ok"} },
		Gatherer: reg,
	})
	srv := httptest.NewServer(apitest.New(t, apidoc.Ops()).Handler(t, h))
	t.Cleanup(srv.Close)
	return srv
}

// TestOpsRouter: the operational endpoints answer as api/ops.openapi.yaml
// says, and serve nothing else.
func TestOpsRouter(t *testing.T) {
	tests := []struct {
		name   string
		ready  error
		method string
		path   string
		status int
		want   string
	}{
		{"healthz", nil, "GET", "/healthz", 200, `"ok"`},
		{"readyz", nil, "GET", "/readyz", 200, `"sns_topic":"ok"`},
		{"not ready", errors.New("down"), "GET", "/readyz", 503, `/problems/not-ready`},
		{"metrics", nil, "GET", "/metrics", 200, `http_requests_rate_limited_total 0`},
		{"no API here", nil, "POST", "/payments", 404, `/problems/not-found`},
		{"no document here", nil, "GET", "/openapi.yaml", 404, `/problems/not-found`},
		{"wrong method", nil, "POST", "/healthz", 405, `/problems/method-not-allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newOps(t, tt.ready)
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status || !strings.Contains(string(b), tt.want) {
				t.Errorf("got %d %s, want %d containing %s", res.StatusCode, b, tt.status, tt.want)
			}
			if tt.status == http.StatusMethodNotAllowed {
				if got := res.Header.Get("Allow"); got != "GET, HEAD" {
					t.Errorf("Allow: got %q, want GET, HEAD, the methods %s takes", got, tt.path)
				}
			}
		})
	}
}

// TestOpsRoutesAreDocumented: the ops router serves exactly the operations
// of its document.
func TestOpsRoutesAreDocumented(t *testing.T) {
	h := httpserver.NewOpsRouter(nil, logtest.Discard(), nil, httpserver.OpsConfig{Gatherer: prometheus.NewRegistry()})
	apitest.New(t, apidoc.Ops()).CheckRoutes(t, h)
}

// TestHeadIsServedForEveryGet: every GET route answers HEAD as it answers
// GET, without the body (RFC 9110, 9.3.2), and lists HEAD in Allow.
func TestHeadIsServedForEveryGet(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := httpserver.NewOpsRouter(func(context.Context) error { return nil }, logtest.Discard(), httpserver.NewMetrics(reg), httpserver.OpsConfig{Gatherer: reg})
	srv := httptest.NewServer(apitest.New(t, apidoc.Ops()).Handler(t, h))
	t.Cleanup(srv.Close)
	send := func(method, path string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	headerNames := func(h http.Header) string {
		var names []string
		for k := range h {
			names = append(names, k)
		}
		slices.Sort(names)
		return strings.Join(names, ",")
	}

	var gets []string
	_ = chi.Walk(h, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == http.MethodGet {
			gets = append(gets, route)
		}
		return nil
	})
	if len(gets) != 3 {
		t.Fatalf("GET routes %v, want /healthz, /readyz and /metrics", gets)
	}
	for _, path := range gets {
		get, getBody := send(http.MethodGet, path)
		head, headBody := send(http.MethodHead, path)
		if head.StatusCode != get.StatusCode || headerNames(head.Header) != headerNames(get.Header) || len(headBody) != 0 || len(getBody) == 0 {
			t.Errorf("HEAD %s: %d [%s] %d bytes; GET: %d [%s] %d bytes", path,
				head.StatusCode, headerNames(head.Header), len(headBody), get.StatusCode, headerNames(get.Header), len(getBody))
		}
		if got := head.Header.Get("Content-Type"); got != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: Content-Type %q, GET's %q", path, got, get.Header.Get("Content-Type"))
		}
	}
	if res, _ := send(http.MethodHead, "/nope"); res.StatusCode != http.StatusNotFound {
		t.Errorf("HEAD /nope: %d, want 404", res.StatusCode)
	}
}
