package outboxstore

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Listen holds a connection that LISTENs on Channel and calls wake for every
// notification, until ctx ends (then it returns nil). A lost connection (server
// restart, failover, idle timeout) is re-established by itself, with a growing
// delay while the server stays away; after each (re)connect wake is called once,
// because notifications sent while nobody listened are gone. The relay's poll
// covers anything the listener still misses: NOTIFY only makes it faster.
//
// The connection is taken out of pool for good (hijacked): a LISTENing session
// must not go back to serve other queries.
//
// The writes do not NOTIFY themselves: a transaction that NOTIFYs takes a lock
// global to the database at commit, which would serialise the payment writes.
// paymentstore.Notifier sends one NOTIFY after the commits, once per burst.
func Listen(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger, wake func()) error {
	return ListenRebalance(ctx, pool, log, wake, nil)
}

// RebalancePayload is the payload of the NOTIFY on Channel that a relay sends
// when partitions need new owners now rather than at the next heartbeat: it
// released its leases (a stop), or a heartbeat left partitions free or itself
// short of its share (a replica came or went).
const RebalancePayload = "rebalance"

// ListenRebalance is Listen that calls rebalance, instead of wake, for a
// notification with RebalancePayload (rebalance may be nil: wake then).
func ListenRebalance(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger, wake, rebalance func()) error {
	const minDelay, maxDelay = 100 * time.Millisecond, 10 * time.Second
	delay := minDelay
	for {
		listening, err := listenOnce(ctx, pool, wake, rebalance)
		if ctx.Err() != nil {
			return nil
		}
		if listening {
			delay = minDelay // the session worked; start over
		}
		log.WarnContext(ctx, "outbox listener lost its connection; reconnecting", "err", err, "delay", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		delay = min(delay*2, maxDelay)
	}
}

// listenOnce runs one LISTEN session; listening reports whether it got as far as
// LISTEN, so the caller can tell a dropped session from a server that is down.
func listenOnce(ctx context.Context, pool *pgxpool.Pool, wake, rebalance func()) (listening bool, err error) {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("acquire listener connection: %w", err)
	}
	conn := c.Hijack()
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return false, fmt.Errorf("listen %s: %w", Channel, err)
	}
	wake()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, fmt.Errorf("wait for notification: %w", err)
		}
		if n.Payload == RebalancePayload && rebalance != nil {
			rebalance()
			continue
		}
		wake()
	}
}
