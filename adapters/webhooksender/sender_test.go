package webhooksender_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/webhooksender"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// TestControlRefusesEveryNonPublicRange checks the dial-time guard on the
// address as the dialer hands it over, "ip:port" after DNS.
func TestControlRefusesEveryNonPublicRange(t *testing.T) {
	t.Parallel()
	refused := map[string]string{
		"loopback":                   "127.0.0.1:443",
		"loopback, far end":          "127.255.255.254:443",
		"RFC 1918 10/8":              "10.1.2.3:443",
		"RFC 1918 172.16/12":         "172.16.0.1:443",
		"RFC 1918 172.31":            "172.31.255.255:443",
		"RFC 1918 192.168/16":        "192.168.1.1:443",
		"link-local":                 "169.254.1.1:80",
		"cloud metadata":             "169.254.169.254:80",
		"CGNAT 100.64/10":            "100.64.0.1:443",
		"CGNAT, far end":             "100.127.255.255:443",
		"this network 0/8":           "0.1.2.3:443",
		"unspecified":                "0.0.0.0:443",
		"broadcast":                  "255.255.255.255:443",
		"multicast":                  "224.0.0.1:443",
		"IPv6 loopback":              "[::1]:443",
		"IPv6 unspecified":           "[::]:443",
		"IPv6 unique local fc00::/7": "[fc00::1]:443",
		"IPv6 unique local fd":       "[fd12:3456::1]:443",
		"IPv6 link-local fe80::/10":  "[fe80::1]:443",
		"IPv6 multicast":             "[ff02::1]:443",
		"IPv4-mapped loopback":       "[::ffff:127.0.0.1]:443",
		"IPv4-mapped metadata":       "[::ffff:169.254.169.254]:80",
		"IPv4-mapped RFC 1918":       "[::ffff:10.0.0.1]:443",
		"IPv4-mapped, even public":   "[::ffff:8.8.8.8]:443",
		"NAT64 of RFC 1918":          "[64:ff9b::a00:1]:443",
		"6to4 of loopback":           "[2002:7f00:1::1]:443",
		"link-local, zoned":          "[fe80::1%eth0]:443",
		// The non-global entries of IANA's special-purpose registries.
		"NAT64 local use, metadata": "[64:ff9b:1::a9fe:a9fe]:80",
		"NAT64 local use, public":   "[64:ff9b:1::808:808]:443",
		"SIIT IPv4-translated":      "[::ffff:0:a9fe:a9fe]:80",
		"IPv4-compatible":           "[::a9fe:a9fe]:80",
		"IPv4-compatible, public":   "[::808:808]:443",
		"site-local fec0::/10":      "[fec0::1]:443",
		"Teredo":                    "[2001:0:4136:e378:8000:63bf:3fff:fdd2]:443",
		"IPv6 benchmarking":         "[2001:2::1]:443",
		"IPv6 documentation":        "[2001:db8::1]:443",
		"IPv6 documentation 3fff":   "[3fff::1]:443",
		"SRv6 SIDs":                 "[5f00::1]:443",
		"discard-only":              "[100::1]:443",
		"outside 2000::/3":          "[4000::1]:443",
		"IETF protocol assignments": "192.0.0.8:443",
		"6to4 relay anycast":        "192.88.99.1:443",
		"benchmarking":              "198.18.0.1:443",
		"documentation":             "192.0.2.1:443",
		"reserved 240/4":            "240.0.0.1:443",
	}
	for name, addr := range refused {
		if err := webhooksender.Control("tcp", addr, nil); !errors.Is(err, webhooksender.ErrRefused) {
			t.Errorf("%s (%s): got %v, want ErrRefused", name, addr, err)
		}
	}
	for _, addr := range []string{"93.184.215.14:443", "[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:443", "8.8.8.8:53", "172.32.0.1:443", "100.128.0.1:443",
		"[2001:4860:4860::8888]:443", "[64:ff9b::808:808]:443", "[2002:808:808::1]:443"} {
		if err := webhooksender.Control("tcp", addr, nil); err != nil {
			t.Errorf("%s is public: got %v", addr, err)
		}
	}
}

// TestSendRefusesLoopbackAfterDNS: a name that resolves to a loopback
// address ("localhost") is refused where it is dialled, and nothing is
// sent; with private targets allowed the same receiver gets the request.
func TestSendRefusesLoopbackAfterDNS(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r.Header.Get("webhook-id") + " " + string(b)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	req := webhooks.Request{URL: url, Headers: map[string]string{"webhook-id": "evt"}, Body: []byte(`{}`)}

	res := webhooksender.New(webhooksender.Config{}).Send(context.Background(), req)
	if res.Failure != webhooks.FailureRefused || res.StatusCode != 0 || !errors.Is(res.Err, webhooksender.ErrRefused) {
		t.Errorf("to localhost: got %+v, want refused", res)
	}
	select {
	case r := <-got:
		t.Fatalf("the receiver got %q", r)
	default:
	}
	res = webhooksender.New(webhooksender.Config{AllowPrivateTargets: true}).Send(context.Background(), req)
	if res.Err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("allowed: got %+v, want 204", res)
	}
	if r := <-got; r != "evt {}" {
		t.Errorf("the receiver got %q", r)
	}
}

// TestSendAnswers: redirects are answers (not followed), bodies are cut
// at 64 KiB, a timeout says so, and the proxy environment is ignored.
func TestSendAnswers(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("http_proxy", "http://127.0.0.1:1")
	hang := make(chan struct{})
	defer close(hang)
	followed := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/target", http.StatusFound)
		case "/target":
			followed = true
		case "/big":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(strings.Repeat("x", 1<<20)))
		case "/slow":
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	s := webhooksender.New(webhooksender.Config{AllowPrivateTargets: true})
	ctx := context.Background()
	if res := s.Send(ctx, webhooks.Request{URL: srv.URL + "/redirect"}); res.StatusCode != http.StatusFound || followed {
		t.Errorf("redirect: got %d (followed: %v), want 302 not followed", res.StatusCode, followed)
	}
	if res := s.Send(ctx, webhooks.Request{URL: srv.URL + "/big"}); res.StatusCode != 500 || len(res.Excerpt) > 512 || len(res.Excerpt) == 0 {
		t.Errorf("big answer: got %d with %d bytes kept", res.StatusCode, len(res.Excerpt))
	}
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if res := s.Send(tctx, webhooks.Request{URL: srv.URL + "/slow"}); res.Failure != webhooks.FailureTimeout || res.Err == nil {
		t.Errorf("slow: got %+v, want a timeout", res)
	}
}

// TestSendNamesTheFailure: an attempt that gets no answer says which kind
// of failure it was, from the error the client returns: each receiver here
// fails in one way, on loopback.
func TestSendNamesTheFailure(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()                                          // nothing listens there now
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler()) // a certificate no one trusts
	defer tlsSrv.Close()
	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // close with a reset
			}
			conn.Close()
		}
	}))
	defer reset.Close()
	s := webhooksender.New(webhooksender.Config{AllowPrivateTargets: true})
	for name, c := range map[string]struct {
		url  string
		want webhooks.Failure
	}{
		"nothing listening":   {closedURL + "/", webhooks.FailureConnRefused},
		"untrusted TLS":       {tlsSrv.URL + "/", webhooks.FailureTLS},
		"reset before answer": {reset.URL + "/", webhooks.FailureConnReset},
	} {
		res := s.Send(context.Background(), webhooks.Request{URL: c.url, Body: []byte(`{}`)})
		if res.Failure != c.want || res.Err == nil || res.StatusCode != 0 {
			t.Errorf("%s: got %q (%v), want %q", name, res.Failure, res.Err, c.want)
		}
	}
}
