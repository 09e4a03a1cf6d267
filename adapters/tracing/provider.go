package tracing

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Exporter is where a service sends its spans: nowhere (tracing off), or to
// an OTLP receiver over HTTP/protobuf or gRPC — what Jaeger, Tempo and every
// OpenTelemetry Collector take. Only the two OTLP exporters are linked: a
// service pays in its binary and go.mod for every exporter it could pick.
type Exporter string

const (
	ExporterOff      Exporter = ""
	ExporterOTLPHTTP Exporter = "otlp http/protobuf"
	ExporterOTLPGRPC Exporter = "otlp grpc"
)

// ExporterFrom reads the exporter the OTEL_* variables configure. Tracing is
// on when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER is "otlp", and
// off when OTEL_TRACES_EXPORTER is "none" or OTEL_SDK_DISABLED is "true".
// The protocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
// OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" (the default) or "grpc".
// The SDK's own default would export to localhost whenever it is built; here
// a service nobody configured for tracing builds nothing, so tracing off
// costs nothing. Errors name the variable and what it accepts.
func ExporterFrom(getenv func(string) string) (Exporter, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return ExporterOff, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return ExporterOff, nil
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return ExporterOff, nil
		}
	case "otlp":
	default:
		return ExporterOff, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: want otlp or none", exp)
	}
	name, protocol := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if protocol == "" {
		name, protocol = "OTEL_EXPORTER_OTLP_PROTOCOL", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch protocol {
	case "", "http/protobuf":
		return ExporterOTLPHTTP, nil
	case "grpc":
		return ExporterOTLPGRPC, nil
	default:
		return ExporterOff, fmt.Errorf("%s=%q: want http/protobuf or grpc", name, protocol)
	}
}

// NewProvider returns a tracer provider for service that batches its spans to
// exp, which must not be ExporterOff. The OTLP exporter reads the rest of
// its settings itself, from the process environment:
// OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout, certificates), and the
// SDK reads OTEL_TRACES_SAMPLER and its argument, OTEL_BSP_* (the batch
// processor), OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. service is the
// service.name unless OTEL_SERVICE_NAME says otherwise. The caller shuts the
// provider down on exit, which flushes the spans not exported yet.
func NewProvider(ctx context.Context, service string, exp Exporter) (*sdktrace.TracerProvider, error) {
	var (
		spans sdktrace.SpanExporter
		err   error
	)
	switch exp {
	case ExporterOTLPHTTP:
		spans, err = otlptracehttp.New(ctx)
	case ExporterOTLPGRPC:
		spans, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("tracing: no exporter %q", exp)
	}
	if err != nil {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_*: %w", err)
	}
	// Later detectors win: the environment's service name over the default.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		_ = spans.Shutdown(ctx)
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res)), nil
}
