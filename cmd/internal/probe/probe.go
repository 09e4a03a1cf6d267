// Package probe is the binaries' own container healthcheck (`payments
// healthcheck`, `ledger healthcheck`): the distroless runtime image has no
// curl, so the binary asks its running twin whether it is ready.
package probe

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Ready asks the server listening on httpAddr (as in HTTP_ADDR, e.g. ":8080")
// for GET /readyz and returns nil only for 200 OK.
func Ready(ctx context.Context, httpAddr string) error {
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return fmt.Errorf("HTTP_ADDR=%q is invalid: %w", httpAddr, err)
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
