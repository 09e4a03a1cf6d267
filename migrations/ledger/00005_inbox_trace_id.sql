-- +goose Up
-- The trace id of the message each inbox row recorded (32 lower-case hex
-- digits, from the message's traceparent), so an operator holding a row can
-- open the trace that wrote the payment, published the event and applied it.
-- NULL when the message carried no trace context.
ALTER TABLE inbox_messages ADD COLUMN trace_id text;

-- +goose Down
ALTER TABLE inbox_messages DROP COLUMN trace_id;
