-- +goose Up
-- The W3C trace context of the write that committed each outbox row: the
-- traceparent and tracestate headers, as text. The relay sends them with the
-- event and starts its publish span from them, so one trace runs from the
-- request that wrote the payment to the consumer that applied its event,
-- however long the row waited and whichever replica published it. Empty when
-- the write was not traced. A constant default makes ADD COLUMN a catalogue
-- change: the table is not rewritten.
ALTER TABLE outbox
    ADD COLUMN traceparent text NOT NULL DEFAULT '',
    ADD COLUMN tracestate  text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE outbox DROP COLUMN traceparent, DROP COLUMN tracestate;
