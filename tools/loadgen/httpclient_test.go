package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// countingServer serves h and counts the connections clients open to it.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	conns := new(atomic.Int32)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, conns
}

func TestPosterKeepsOneConnectionAlive(t *testing.T) {
	var got []string
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+r.Header.Get("Content-Type")+" "+string(body))
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"x"}`))
	})

	p, err := newPoster(srv.URL+"/payments", "pk_test_k")
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	for i := range 3 {
		status, err := p.post([]byte(`{"n":1}`))
		if err != nil || status != http.StatusCreated {
			t.Fatalf("post %d: status %d, err %v; want 201", i, status, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 3 requests, want 1 kept alive", n)
	}
	if want := `POST /payments Bearer pk_test_k application/json {"n":1}`; len(got) != 3 || got[2] != want {
		t.Errorf("server saw %q, want 3 × %q", got, want)
	}
}

func TestPosterRedialsAfterConnectionCloseAndReadsChunkedBodies(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte("first part, "))
		w.(http.Flusher).Flush() // forces a chunked body
		_, _ = w.Write([]byte("second part"))
	})

	p, err := newPoster(srv.URL+"/payments", "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	for i := range 2 {
		status, err := p.post([]byte(`{}`))
		if err != nil || status != http.StatusConflict {
			t.Fatalf("post %d: status %d, err %v; want 409", i, status, err)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the server closed the first", n)
	}
}

func TestPosterReportsADeadServer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	p, err := newPoster(srv.URL+"/payments", "")
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if _, err := p.post([]byte(`{}`)); err == nil {
		t.Fatal("post to a closed server succeeded")
	}
	if _, err := newPoster("https://example.test/payments", ""); err == nil {
		t.Error("newPoster accepted https, which it cannot speak")
	}
}
