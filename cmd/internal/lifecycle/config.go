package lifecycle

import (
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/cmd/internal/envconfig"
)

// Common is the configuration every service reads alike
// (docs/CONFIGURATION.md, "Every service"): its database, its two listeners, the AWS endpoint, its
// logging, migrations, stop and tracing. A service's config embeds it.
type Common struct {
	DatabaseURL     string
	HTTPAddr        string
	OpsAddr         string // /healthz, /readyz, /metrics: never the public port
	AWSRegion       string
	AWSEndpointURL  string // empty: real AWS
	LogLevel        slog.Level
	MigrateOnStart  bool
	ShutdownTimeout time.Duration
	// Tracing is the trace exporter the OTEL_* variables configure
	// (tracing.ExporterFrom), ExporterOff for none; the OpenTelemetry SDK
	// reads the rest of them.
	Tracing tracing.Exporter
}

// ReadCommon reads Common through e (getenv is e's, for the OTEL_*
// variables); httpAddr and opsAddr are the service's default addresses.
func ReadCommon(e *envconfig.Reader, getenv func(string) string, httpAddr, opsAddr string) Common {
	c := Common{
		DatabaseURL:     e.Required("DATABASE_URL"),
		HTTPAddr:        e.String("HTTP_ADDR", httpAddr),
		OpsAddr:         e.String("OPS_ADDR", opsAddr),
		AWSRegion:       e.String("AWS_REGION", "us-east-1"),
		AWSEndpointURL:  e.String("AWS_ENDPOINT_URL", ""),
		LogLevel:        e.Level("LOG_LEVEL", slog.LevelInfo),
		MigrateOnStart:  e.Bool("MIGRATE_ON_START", true),
		ShutdownTimeout: e.Duration("SHUTDOWN_TIMEOUT", 15*time.Second),
	}
	exp, err := tracing.ExporterFrom(getenv)
	if err != nil {
		e.Fail(err)
	}
	c.Tracing = exp
	if c.OpsAddr == c.HTTPAddr && !strings.HasSuffix(c.OpsAddr, ":0") { // :0 is any free port, two different ones
		e.Fail(errors.New("OPS_ADDR must differ from HTTP_ADDR: the operational endpoints never share the public port"))
	}
	return c
}
