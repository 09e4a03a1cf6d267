package probe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReady(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	if err := Ready(ctx, "OPS_ADDR", addr); err != nil {
		t.Errorf("ready server: %v", err)
	}
	status = http.StatusServiceUnavailable
	if err := Ready(ctx, "OPS_ADDR", addr); err == nil {
		t.Error("a 503 /readyz passed the healthcheck")
	}
	if err := Ready(ctx, "OPS_ADDR", "no-port"); err == nil || !strings.Contains(err.Error(), "OPS_ADDR") {
		t.Errorf("bad address: err = %v, want one naming OPS_ADDR", err)
	}
}
