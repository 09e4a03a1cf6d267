package webhooksender

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// TestCategory: each error the HTTP client returns for an attempt without
// an answer maps to its category, wrapped as the client wraps it. The
// errors that need a network the tests may not reach (a resolver's answer)
// are built here.
func TestCategory(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error {
		return &url.Error{Op: "Post", URL: "https://hooks.example/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
	}
	for name, c := range map[string]struct {
		err  error
		want webhooks.Failure
	}{
		"no such host":         {wrap(&net.DNSError{Err: "no such host", Name: "hooks.example", Server: "127.0.0.53:53", IsNotFound: true}), webhooks.FailureDNS},
		"resolver timed out":   {wrap(&net.DNSError{Err: "i/o timeout", Name: "hooks.example", Server: "127.0.0.53:53", IsTimeout: true}), webhooks.FailureDNS},
		"address refused":      {wrap(fmt.Errorf("%w: 127.0.0.2 is not a public address", ErrRefused)), webhooks.FailureRefused},
		"attempt deadline":     {fmt.Errorf("post: %w", context.DeadlineExceeded), webhooks.FailureTimeout},
		"dial timeout":         {wrap(os.ErrDeadlineExceeded), webhooks.FailureTimeout},
		"unknown authority":    {&url.Error{Op: "Post", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}, webhooks.FailureTLS},
		"wrong host":           {&url.Error{Op: "Post", Err: x509.HostnameError{Host: "hooks.example"}}, webhooks.FailureTLS},
		"not TLS":              {&url.Error{Op: "Post", Err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}}, webhooks.FailureTLS},
		"TLS alert":            {&url.Error{Op: "Post", Err: &net.OpError{Op: "remote error", Err: tls.AlertError(40)}}, webhooks.FailureTLS},
		"connection refused":   {wrap(os.NewSyscallError("connect", syscall.ECONNREFUSED)), webhooks.FailureConnRefused},
		"connection reset":     {wrap(os.NewSyscallError("read", syscall.ECONNRESET)), webhooks.FailureConnReset},
		"closed before answer": {&url.Error{Op: "Post", Err: io.EOF}, webhooks.FailureConnReset},
		"anything else":        {wrap(errors.New("network is unreachable")), webhooks.FailureConnection},
	} {
		if got := category(context.Background(), c.err); got != c.want {
			t.Errorf("%s: got %q, want %q", name, got, c.want)
		}
	}
}
