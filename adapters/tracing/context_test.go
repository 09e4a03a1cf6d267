package tracing_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/application/inbox"
)

func TestExporterFrom(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want tracing.Exporter
	}{
		{"nothing set", nil, tracing.ExporterOff},
		{"an OTLP endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, tracing.ExporterOTLPHTTP},
		{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://jaeger:4318/v1/traces"}, tracing.ExporterOTLPHTTP},
		{"an empty endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ""}, tracing.ExporterOff},
		{"otlp named, its endpoint the SDK's default", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, tracing.ExporterOTLPHTTP},
		{"gRPC", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, tracing.ExporterOTLPGRPC},
		{"the traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, tracing.ExporterOTLPHTTP},
		{"exporter none beats an endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, tracing.ExporterOff},
		{"the SDK disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, tracing.ExporterOff},
		{"only a service name", map[string]string{"OTEL_SERVICE_NAME": "payments"}, tracing.ExporterOff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tracing.ExporterFrom(func(k string) string { return tt.env[k] })
			if err != nil || got != tt.want {
				t.Errorf("ExporterFrom = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// An exporter this build does not link, or a protocol the OTLP exporters do
// not speak, stops start-up with the variable named, instead of tracing
// silently off.
func TestExporterFromRefusesWhatItCannotExport(t *testing.T) {
	for env, want := range map[[2]string]string{
		{"OTEL_TRACES_EXPORTER", "console"}:                      "OTEL_TRACES_EXPORTER",
		{"OTEL_TRACES_EXPORTER", "zipkin"}:                       "OTEL_TRACES_EXPORTER",
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"}:             "OTEL_EXPORTER_OTLP_PROTOCOL",
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "carrier-pigeon"}: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	} {
		getenv := func(k string) string {
			switch k {
			case env[0]:
				return env[1]
			case "OTEL_EXPORTER_OTLP_ENDPOINT":
				return "http://jaeger:4318"
			}
			return ""
		}
		if _, err := tracing.ExporterFrom(getenv); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: err %v, want one naming %s", env[0], env[1], err, want)
		}
	}
}

func TestTraceContextRoundTrip(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := tracing.Extract(context.Background(), parent, "vendor=opaque")
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsRemote() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("Extract: span context %+v, want the remote one traceparent names", sc)
	}
	if p, s := tracing.Inject(ctx); p != parent || s != "vendor=opaque" {
		t.Errorf("Inject = %q, %q; want what was extracted", p, s)
	}
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
		if sc := trace.SpanContextFromContext(tracing.Extract(context.Background(), bad, "")); sc.IsValid() {
			t.Errorf("Extract(%q) gave a valid span context %+v, want none", bad, sc)
		}
	}
	if p, s := tracing.Inject(context.Background()); p != "" || s != "" {
		t.Errorf("Inject without a span = %q, %q; want nothing", p, s)
	}
}

// The inbox reads an event's trace id from its traceparent without
// OpenTelemetry (inbox.Event.TraceID), so that the store keeps it as data:
// it must read what OpenTelemetry's propagator reads, and refuse what it
// refuses.
func TestTheInboxReadsTheTraceIDAsOpenTelemetryDoes(t *testing.T) {
	const id, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for _, tp := range []string{
		"00-" + id + "-" + parent + "-01",
		"00-" + id + "-" + parent + "-00",
		"01-" + id + "-" + parent + "-01",
		"01-" + id + "-" + parent + "-01-what-comes-later",
		"00-" + id + "-" + parent + "-01-more",
		"ff-" + id + "-" + parent + "-01",
		"00-" + strings.ToUpper(id) + "-" + parent + "-01",
		"00-00000000000000000000000000000000-" + parent + "-01",
		"00-" + id + "-0000000000000000-01",
		"00-" + id + "-" + parent + "-0x",
		"00-" + id + "-" + parent + "01",
		"00_" + id + "_" + parent + "_01",
		"00-" + id[1:] + "-" + parent + "-01",
		"", "garbage",
	} {
		want := ""
		if sc := tracing.SpanContext(tp, ""); sc.IsValid() {
			want = sc.TraceID().String()
		}
		if got := (inbox.Event{TraceParent: tp}).TraceID(); got != want {
			t.Errorf("traceparent %q: the inbox reads trace id %q, OpenTelemetry %q", tp, got, want)
		}
	}
}
