package httpserver_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
)

func newOps(t *testing.T, ready error) *httptest.Server {
	reg := prometheus.NewRegistry()
	m := httpserver.NewMetrics(reg)
	h := httpserver.NewOpsRouter(httpserver.Ops{
		Log:      slog.New(slog.DiscardHandler),
		Ready:    func(context.Context) error { return ready },
		Status:   func() map[string]string { return map[string]string{"sns_topic": "ok"} },
		Metrics:  m,
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
				if got := res.Header.Get("Allow"); got != "GET" {
					t.Errorf("Allow: got %q, want GET, the one method %s takes", got, tt.path)
				}
			}
		})
	}
}

// TestOpsRoutesAreDocumented: the ops router serves exactly the operations
// of its document.
func TestOpsRoutesAreDocumented(t *testing.T) {
	h := httpserver.NewOpsRouter(httpserver.Ops{Log: slog.New(slog.DiscardHandler), Gatherer: prometheus.NewRegistry()})
	apitest.New(t, apidoc.Ops()).CheckRoutes(t, h)
}
