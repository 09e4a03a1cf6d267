package main

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// config is the payments service's whole configuration (SPEC §4), read once
// from the environment at start-up. Nothing else reads the environment.
type config struct {
	DatabaseURL    string
	HTTPAddr       string
	AWSRegion      string
	AWSEndpointURL string // empty: real AWS
	LogLevel       slog.Level
	MigrateOnStart bool
	TopicARN       string

	OutboxPollInterval time.Duration
	OutboxBatchSize    int
	OutboxMaxAttempts  int
	OutboxNotify       bool
	OutboxRetention    time.Duration

	ShutdownTimeout time.Duration
}

// loadConfig reads the configuration through getenv. The first bad or missing
// value stops start-up with an error naming the variable. requireTopic is
// false for commands that never publish (migrate, outbox stats).
func loadConfig(getenv func(string) string, requireTopic bool) (config, error) {
	e := env{getenv: getenv}
	cfg := config{
		DatabaseURL:        e.required("DATABASE_URL"),
		HTTPAddr:           e.str("HTTP_ADDR", ":8080"),
		AWSRegion:          e.str("AWS_REGION", "us-east-1"),
		AWSEndpointURL:     e.str("AWS_ENDPOINT_URL", ""),
		LogLevel:           e.level("LOG_LEVEL", slog.LevelInfo),
		MigrateOnStart:     e.bool("MIGRATE_ON_START", true),
		TopicARN:           e.str("PAYMENTS_TOPIC_ARN", ""),
		OutboxPollInterval: e.duration("OUTBOX_POLL_INTERVAL", time.Second),
		OutboxBatchSize:    e.positiveInt("OUTBOX_BATCH_SIZE", 100),
		OutboxMaxAttempts:  e.positiveInt("OUTBOX_MAX_ATTEMPTS", 10),
		OutboxNotify:       e.bool("OUTBOX_NOTIFY", true),
		OutboxRetention:    e.duration("OUTBOX_RETENTION", 168*time.Hour),
		ShutdownTimeout:    e.duration("SHUTDOWN_TIMEOUT", 15*time.Second),
	}
	if requireTopic && cfg.TopicARN == "" && e.err == nil {
		e.err = fmt.Errorf("PAYMENTS_TOPIC_ARN is required (the SNS topic the outbox relay publishes to)")
	}
	return cfg, e.err
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
	if err != nil || n <= 0 {
		e.fail(name, v, "want a positive integer")
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
		e.fail(name, v, "want a positive Go duration such as 1s or 168h")
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
