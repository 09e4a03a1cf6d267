package outbox

import "time"

// The defaults of the Config fields a deployment sets (cmd/payments passes
// them as its variables' defaults): each stated here once.
const (
	DefaultBatchSize    = 100
	DefaultMaxAttempts  = 10
	DefaultPollInterval = time.Second
)

// Config tunes a Relay. Zero fields take the defaults named on each.
type Config struct {
	// BatchSize is the most rows a claim transaction takes; fewer while
	// the broker answers slower than the publish deadline (batchsize.go).
	// DefaultBatchSize.
	BatchSize    int
	MaxAttempts  int           // failed publishes before DEAD; DefaultMaxAttempts
	PollInterval time.Duration // safety-net poll when no wake-up arrives; DefaultPollInterval
	// Workers is how many claim loops run at once. Each holds one database
	// connection while its batch is at the broker, so several keep the
	// broker busy while one waits on the database. Default 4; WorkersFor
	// sizes it to a shared pool.
	Workers     int
	BackoffBase time.Duration // delay after the first failure; default 1s
	BackoffMax  time.Duration // ceiling of the delay; default 5m
	// PublishTimeout bounds one batch, from its claim to its commit, also
	// the batch in hand when the relay stops. The publish ends a quarter of
	// it before the commit's deadline, so that what the broker answered by
	// then is always written (batchsize.go). Default 30s.
	PublishTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
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
