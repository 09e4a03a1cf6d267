package relay

import (
	"os"
	"time"

	"github.com/google/uuid"
)

// Config tunes a Relay. Zero fields take the defaults named on each.
type Config struct {
	BatchSize    int           // rows per claim transaction; default 100
	MaxAttempts  int           // failed publishes before DEAD; default 10
	PollInterval time.Duration // safety-net poll when no wake-up arrives; default 1s
	// Workers is how many claim loops run at once. Each holds one database
	// connection while its batch is published, so several keep the broker busy
	// while one waits on the database. Default 4; WorkersFor sizes it to a
	// shared pool.
	Workers     int
	BackoffBase time.Duration // delay after the first failure; default 1s
	BackoffMax  time.Duration // ceiling of the delay; default 5m
	// PublishTimeout bounds one batch's publish, also during shutdown when the
	// in-flight batch is allowed to finish. Default 30s.
	PublishTimeout time.Duration

	// Ordered publishes each aggregate's events in the order they were
	// written (Claim.Ordered): a row the broker refused holds back the rows
	// of its aggregate behind it until it is published or DEAD; other
	// aggregates go on.
	Ordered bool
	// Owner names this replica in the leases. Two relays must never share
	// one. Default: the host name (a container's is its id, a pod's its
	// name), so that `payments outbox partitions` says which replica holds
	// what, and a random suffix, so that two relays on one host never share
	// leases.
	Owner string
	// LeaseDuration is how long a lease lasts without renewal: the longest a
	// crashed replica's partitions wait before another replica takes them.
	// Default 15s.
	LeaseDuration time.Duration
	// Heartbeat is how often leases are renewed and rebalanced; default a
	// third of LeaseDuration, so two heartbeats may fail before a lease
	// expires.
	Heartbeat time.Duration
	// ActiveClaims is how many claim transactions the replicas together
	// keep at work in the database at once: each of n replicas has
	// ActiveClaims/n turns, at least one (turns.go). Default 2.
	ActiveClaims int
}

func (c Config) withDefaults() Config {
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 10
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.Workers <= 0 {
		c.Workers = defaultWorkers
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 5 * time.Minute
	}
	if c.BackoffMax < c.BackoffBase {
		c.BackoffMax = c.BackoffBase
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = 30 * time.Second
	}
	if c.ActiveClaims <= 0 {
		c.ActiveClaims = 2
	}
	if c.Owner == "" {
		c.Owner = hostOwner()
	}
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = 15 * time.Second
	}
	if c.Heartbeat <= 0 || c.Heartbeat > c.LeaseDuration/2 {
		c.Heartbeat = c.LeaseDuration / 3
	}
	return c
}

// defaultWorkers is Config.Workers's default, and the most WorkersFor gives:
// the workers are there to keep the broker busy while one of them waits on
// the database, and a few do that.
const defaultWorkers = 4

// WorkersFor is Config.Workers for a relay that shares a pool of maxConns
// connections with other work (the API's requests): each worker holds a
// connection while its batch is at the broker, so the relay takes at most
// half the pool and the other work always finds a connection during a
// backlog.
func WorkersFor(maxConns int) int {
	return min(defaultWorkers, max(1, maxConns/2))
}

// hostOwner is the default Config.Owner: the host name and a random suffix.
func hostOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "relay"
	}
	return host + "-" + uuid.NewString()[:8]
}
