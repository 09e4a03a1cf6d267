-- +goose Up
-- The inbox: every message the ledger accepted, keyed by the message id (the
-- CloudEvent id). The primary key IS the first layer of idempotency: the
-- consumer inserts with ON CONFLICT DO NOTHING in the same transaction as the
-- ledger rows, so a redelivered message inserts nothing and is acknowledged.
-- The whole message is kept (not just its id) as an audit record of what
-- arrived, and so that events of a type this version does not handle can be
-- applied later by a version that does.
CREATE TABLE inbox_messages (
    id           uuid        PRIMARY KEY,
    type         text        NOT NULL,
    payload      jsonb       NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    -- NULL = recorded but not applied (an event type this version does not handle).
    processed_at timestamptz,
    error        text
);

-- Only unapplied rows are indexed, so the index stays small however many
-- applied rows wait for the retention cleanup.
CREATE INDEX inbox_messages_pending_idx ON inbox_messages (received_at) WHERE processed_at IS NULL;
-- Retention cleanup deletes by age in bounded batches.
CREATE INDEX inbox_messages_received_at_idx ON inbox_messages (received_at);

-- +goose Down
DROP TABLE inbox_messages;
