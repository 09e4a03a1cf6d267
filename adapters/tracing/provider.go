package tracing

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Configured reports whether getenv configures a trace exporter: an OTLP
// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// or an OTEL_TRACES_EXPORTER other than "none", and OTEL_SDK_DISABLED not
// "true". The SDK's own default would export OTLP to localhost whenever it is
// built; here a service nobody configured for tracing builds nothing, so
// tracing off costs nothing.
func Configured(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return true
	}
}

// NewProvider returns a tracer provider for service that batches its spans to
// the exporter the OTEL_* environment variables configure. The OpenTelemetry
// SDK reads them itself, from the process environment: OTEL_TRACES_EXPORTER
// (otlp, console, none), OTEL_EXPORTER_OTLP_* (endpoint, protocol, headers,
// timeout), OTEL_TRACES_SAMPLER and its argument, OTEL_BSP_* (the batch
// processor), OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. service is the
// service.name unless OTEL_SERVICE_NAME says otherwise. The caller shuts the
// provider down on exit, which flushes the spans not exported yet.
func NewProvider(ctx context.Context, service string) (*sdktrace.TracerProvider, error) {
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_*: %w", err)
	}
	// Later detectors win: the environment's service name over the default.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
