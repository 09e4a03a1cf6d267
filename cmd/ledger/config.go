package main

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// config is the ledger service's whole configuration (SPEC §4), read once
// from the environment at start-up. Nothing else reads the environment.
type config struct {
	DatabaseURL    string
	HTTPAddr       string
	AWSRegion      string
	AWSEndpointURL string // empty: real AWS
	LogLevel       slog.Level
	MigrateOnStart bool
	QueueURL       string
	DLQURL         string
	Workers        int
	InboxRetention time.Duration

	ShutdownTimeout time.Duration
	DLQPollInterval time.Duration
}

// loadConfig reads the configuration through getenv. The first bad or missing
// value stops start-up with an error naming the variable. needQueues is false
// for commands that never talk to SQS (migrate, reconcile).
func loadConfig(getenv func(string) string, needQueues bool) (config, error) {
	e := env{getenv: getenv}
	cfg := config{
		DatabaseURL:     e.required("DATABASE_URL"),
		HTTPAddr:        e.str("HTTP_ADDR", ":8081"),
		AWSRegion:       e.str("AWS_REGION", "us-east-1"),
		AWSEndpointURL:  e.str("AWS_ENDPOINT_URL", ""),
		LogLevel:        e.level("LOG_LEVEL", slog.LevelInfo),
		MigrateOnStart:  e.bool("MIGRATE_ON_START", true),
		Workers:         e.positiveInt("LEDGER_WORKERS", 4),
		InboxRetention:  e.duration("INBOX_RETENTION", 360*time.Hour),
		ShutdownTimeout: e.duration("SHUTDOWN_TIMEOUT", 15*time.Second),
		DLQPollInterval: e.duration("LEDGER_DLQ_POLL_INTERVAL", 30*time.Second),
	}
	if needQueues {
		cfg.QueueURL = e.required("LEDGER_QUEUE_URL")
		cfg.DLQURL = e.required("LEDGER_DLQ_URL")
	}
	return cfg, e.err
}

// poolURL sizes the connection pool to the consumer: one connection per
// worker plus a few for the HTTP API and the background jobs, unless the URL
// already says pool_max_conns. pgx's default (the number of CPUs, at least 4)
// would make workers queue for connections.
func (c config) poolURL() string {
	if strings.Contains(c.DatabaseURL, "pool_max_conns=") {
		return c.DatabaseURL
	}
	sep := "?"
	if strings.Contains(c.DatabaseURL, "?") {
		sep = "&"
	}
	return c.DatabaseURL + sep + "pool_max_conns=" + strconv.Itoa(c.Workers+4)
}

// env reads variables and keeps the first error, so loadConfig reads like a
// table.
type env struct {
	getenv func(string) string
	err    error
}

func (e *env) fail(name, value, want string) {
	if e.err == nil {
		e.err = fmt.Errorf("%s=%q is invalid: %s", name, value, want)
	}
}

func (e *env) str(name, def string) string {
	if v := strings.TrimSpace(e.getenv(name)); v != "" {
		return v
	}
	return def
}

func (e *env) required(name string) string {
	v := strings.TrimSpace(e.getenv(name))
	if v == "" && e.err == nil {
		e.err = fmt.Errorf("%s is required", name)
	}
	return v
}

func (e *env) bool(name string, def bool) bool {
	v := e.str(name, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.fail(name, v, "want true or false")
	}
	return b
}

func (e *env) positiveInt(name string, def int) int {
	v := e.str(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > 256 {
		e.fail(name, v, "want an integer from 1 to 256")
	}
	return n
}

func (e *env) duration(name string, def time.Duration) time.Duration {
	v := e.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		e.fail(name, v, "want a positive Go duration such as 1s or 360h")
	}
	return d
}

func (e *env) level(name string, def slog.Level) slog.Level {
	v := e.str(name, "")
	if v == "" {
		return def
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		e.fail(name, v, "want debug, info, warn or error")
	}
	return l
}
