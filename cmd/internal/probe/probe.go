// Package probe is the binaries' own container healthcheck (`payments
// healthcheck`, `ledger healthcheck`, `webhooks healthcheck`): the
// distroless runtime image has no curl, so the binary asks its running
// twin's operational listener whether it is ready.
package probe

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Ready asks the server listening on addr (the value of the variable name,
// e.g. OPS_ADDR=":9090") for GET /readyz and returns nil only for 200 OK.
func Ready(ctx context.Context, name, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s=%q is invalid: %w", name, addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/readyz", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: /readyz answered %s", res.Status)
	}
	return nil
}
