package tracing_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
)

func TestConfigured(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"an OTLP endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, true},
		{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://jaeger:4318/v1/traces"}, true},
		{"an empty endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ""}, false},
		{"the console exporter", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{"exporter none beats an endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, false},
		{"the SDK disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, false},
		{"only a service name", map[string]string{"OTEL_SERVICE_NAME": "payments"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tracing.Configured(func(k string) string { return tt.env[k] }); got != tt.want {
				t.Errorf("Configured = %t, want %t", got, tt.want)
			}
		})
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
