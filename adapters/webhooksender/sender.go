// Package webhooksender sends webhook attempts over HTTP (webhooks.Sender),
// guarded against server-side request forgery: the address a connection
// is about to be made to — after DNS, so that a name which resolves to a
// private address, or rebinds to one between the check and the dial,
// cannot pass — must be public (webhooks.IsPublic) unless private targets
// are allowed. No proxy is used (HTTP_PROXY is ignored: a proxy would make
// the dial the proxy's and the check meaningless), no redirect is
// followed, and at most 64 KiB of an answer is read.
package webhooksender

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// MaxBody is how much of an answer is read: enough to reuse the
// connection after most answers, never a receiver's whole stream.
const MaxBody = 64 << 10

// excerpt is how much of the body the attempt keeps.
const excerpt = 512

// ErrRefused means the address dialled is not allowed.
var ErrRefused = errors.New("address not allowed for webhooks")

// Config tunes a Sender.
type Config struct {
	// AllowPrivateTargets turns the address check off: for compose and
	// tests, whose receivers are on loopback or a private network.
	AllowPrivateTargets bool
}

// Sender is a webhooks.Sender over net/http.
type Sender struct {
	client *http.Client
}

var _ webhooks.Sender = (*Sender)(nil)

// New returns a Sender.
func New(cfg Config) *Sender {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !cfg.AllowPrivateTargets {
		dialer.Control = Control
	}
	transport := &http.Transport{
		Proxy:                  nil, // never the environment's proxy
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  0, // the attempt's context bounds it
		MaxResponseHeaderBytes: 16 << 10,
	}
	return &Sender{client: &http.Client{
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a 3xx is an answer, and a failure
		},
	}}
}

// Control is the dialer's check of the address it is about to connect to:
// the resolved one, not the name.
func Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrRefused, address, err)
	}
	if !webhooks.IsPublic(ap.Addr()) {
		return fmt.Errorf("%w: %s is not a public address", ErrRefused, ap.Addr())
	}
	return nil
}

// Send implements webhooks.Sender.
func (s *Sender) Send(ctx context.Context, r webhooks.Request) webhooks.Response {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return webhooks.Response{Err: err, Failure: webhooks.FailureConnection}
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	res, err := s.client.Do(req)
	if err != nil {
		return failed(ctx, err)
	}
	defer res.Body.Close()
	// The status is the answer; a body cut short by the timeout or a reset
	// changes nothing of it.
	body, _ := io.ReadAll(io.LimitReader(res.Body, MaxBody))
	return webhooks.Response{StatusCode: res.StatusCode, Excerpt: body[:min(len(body), excerpt)]}
}

// failed describes an attempt that got no answer: the error whole, for the
// operator's log, and its category, which is all the merchant sees.
func failed(ctx context.Context, err error) webhooks.Response {
	return webhooks.Response{Err: err, Failure: category(ctx, err)}
}

// category is what kind of failure err is. The order matters: the address
// guard's refusal and the attempt's deadline are told first, since either
// can surface wrapped in a dial or TLS error.
func category(ctx context.Context, err error) webhooks.Failure {
	var (
		dnsErr    *net.DNSError
		netErr    net.Error
		recordErr tls.RecordHeaderError
		alertErr  tls.AlertError
		certErr   *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, ErrRefused):
		return webhooks.FailureRefused
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return webhooks.FailureTimeout
	case errors.As(err, &dnsErr):
		return webhooks.FailureDNS
	case errors.As(err, &netErr) && netErr.Timeout():
		return webhooks.FailureTimeout // the dial's or the TLS handshake's own
	case errors.As(err, &recordErr), errors.As(err, &alertErr), errors.As(err, &certErr),
		errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalid):
		return webhooks.FailureTLS
	case errors.Is(err, syscall.ECONNREFUSED):
		return webhooks.FailureConnRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.EPIPE):
		return webhooks.FailureConnReset
	default:
		return webhooks.FailureConnection
	}
}
