// Package tracing is the OpenTelemetry side every service shares: the tracer
// provider the standard OTEL_* variables configure, the W3C trace context in
// the plain strings the outbox and the broker carry, the spans of the relay
// (Relay, OrderedRelay, decorators of the shared outbox's ports), and the
// mechanics of a consumer's inbox decorator (Inbox). Each service's own
// ports are decorated beside it (adapters/paymentstracing, ledgertracing,
// webhookstracing): no store starts a span of its own.
//
// # One trace across the outbox
//
// The use case that writes a payment reads the trace context of the request
// it serves (paymentstracing.TraceContext, the payments.TraceContextFunc port) and
// encodes it in each event the write records, as the CloudEvents
// distributed-tracing extension; the outbox row stores it too. The write's
// transaction is a span of its own under the request ("create payment",
// paymentstracing.Repository). The relay sends the context again as the SNS message attributes
// traceparent and tracestate, and the ledger starts its processing span as a
// child of it (adapters/sqs). So the trace that begins with POST /payments
// ends with the ledger's commit, although the publish happens later, in
// another goroutine or replica.
//
// A parent would mislead in one place, the relay's batch: it claims and
// publishes rows written by many requests, so it cannot be the child of any
// of them. The batch is a trace of its own ("outbox claim") with a link to
// each row's context, and each row's publish span is a child of the row's
// context with a link back to the batch (Relay). A trace therefore shows,
// under the request that wrote the event, when the event left and whether
// the broker took it; the batch's trace shows the claim as a whole.
//
// # Off by default, and cheap when off
//
// With no exporter configured (Configured reports false) the services build
// no provider: no middleware is installed, no span is started and no trace
// context is stored. The adapters take a nil trace.TracerProvider to mean
// exactly that.
package tracing
