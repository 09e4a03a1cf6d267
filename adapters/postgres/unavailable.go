package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/payments-outbox/payments-outbox/application/dependency"
)

// Unavailable is the one classifier from a driver's error to the ports'
// errors: it returns err wrapped in dependency.ErrUnavailable when the
// database could not be reached, did not answer in time, or gave up the
// transaction for a reason of the moment — so the APIs answer 503 with
// Retry-After and the loops retry — and err unchanged otherwise (nil
// included, and an error already wrapped). Every store returns its errors
// through it; what a store makes of a refusal it expects (not found, a
// constraint it names) stays in the store, before this call.
func Unavailable(err error) error {
	if err == nil || errors.Is(err, dependency.ErrUnavailable) || !unavailable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", dependency.ErrUnavailable, err)
}

// unavailable reports whether err means "retry later" rather than "the
// server refused the statement":
//
//   - the server could not be reached, or not in time (a refused or timed-out
//     connection, a deadline);
//   - a connection broke under the statement (a database restart or a network
//     cut kills the pool's open connections): the server rolled the
//     transaction back, unless the break hit its COMMIT, whose outcome is
//     then unknown — which is what Idempotency-Key retries are for;
//   - the server is shutting down, restarting or full: connection exceptions
//     (class 08), admin or crash shutdown (57P01, 57P02), "the database
//     system is starting up" (57P03), too many connections (53300);
//   - the server rolled the transaction back to break a deadlock (40P01) or
//     a serialization failure (40001): nothing was done, and the same
//     transaction run again succeeds.
//
// A closed pool is not among them: a process closes its pool only after
// every goroutine that used it has stopped, so that error is a bug to see,
// not an outage to wait out.
func unavailable(err error) bool {
	var (
		connErr *pgconn.ConnectError
		netErr  net.Error
		pgErr   *pgconn.PgError
	)
	if errors.As(err, &connErr) || pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", "53300", "40P01", "40001":
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08")
	}
	return pgconn.SafeToRetry(err) || errors.As(err, &netErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}
