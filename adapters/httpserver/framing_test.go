package httpserver_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// TestTransferEncodingIsRefusedAndTheConnectionClosed sends, on a raw
// connection to a real listener, requests whose body is framed by
// Transfer-Encoding, each followed on the same connection by a second
// request: the first is answered 400 transfer-encoding-refused and the
// connection closed, so the second is never served. With Content-Length
// beside the chunks, the second request is what a proxy that reads
// Content-Length took for the first one's body: request smuggling.
func TestTransferEncodingIsRefusedAndTheConnectionClosed(t *testing.T) {
	h := httpserver.NewOpsRouter(nil, logtest.Discard(), nil, httpserver.OpsConfig{})
	srv := httptest.NewServer(apitest.New(t, apidoc.Ops()).Handler(t, h))
	t.Cleanup(srv.Close)

	// The second request asks to close, so that a server that serves it
	// does not keep the test waiting.
	hidden := "GET /healthz HTTP/1.1\r\nHost: ops\r\nConnection: close\r\n\r\n"
	tests := map[string]string{
		"Content-Length and Transfer-Encoding": fmt.Sprintf("GET /readyz HTTP/1.1\r\nHost: ops\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n%s", len("0\r\n\r\n"+hidden), hidden),
		"Transfer-Encoding and Content-Length": fmt.Sprintf("GET /readyz HTTP/1.1\r\nHost: ops\r\nTransfer-Encoding: chunked\r\nContent-Length: %d\r\n\r\n0\r\n\r\n%s", len("0\r\n\r\n"+hidden), hidden),
		"chunked alone":                        "POST /healthz HTTP/1.1\r\nHost: ops\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n" + hidden,
	}
	for name, raw := range tests {
		t.Run(name, func(t *testing.T) {
			res, rest := rawExchange(t, srv.Listener.Addr().String(), raw)
			if res.StatusCode != http.StatusBadRequest || !res.Close {
				t.Errorf("answered %d, Connection %q; want 400 and close", res.StatusCode, res.Header.Get("Connection"))
			}
			var p httpserver.Problem
			if err := json.NewDecoder(res.Body).Decode(&p); err != nil || p.Type != "/problems/transfer-encoding-refused" {
				t.Errorf("problem %+v (%v), want /problems/transfer-encoding-refused", p, err)
			}
			if rest != "" {
				t.Errorf("the second request on the connection was served: %q", rest)
			}
		})
	}
}

// rawExchange writes raw on a new connection to addr and returns the first
// response, and whatever the server sent after it until it closed the
// connection. It fails t if the server leaves the connection open.
func rawExchange(t *testing.T, addr, raw string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// A failsafe only: a server that closes returns the reads below at once.
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read the first response: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read the first response's body: %v", err)
	}
	res.Body = io.NopCloser(strings.NewReader(string(body)))
	rest, err := io.ReadAll(br)
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		t.Fatalf("the connection was left open (read %q)", rest)
	}
	return res, string(rest)
}
