-- +goose Up
-- The transactional outbox: one row per domain event, written in the same
-- transaction as the state change it describes. id is the message id that
-- consumers use as their idempotency key.
CREATE TABLE outbox (
    id              uuid        PRIMARY KEY,
    type            text        NOT NULL,
    aggregate_id    uuid        NOT NULL,
    payload         jsonb       NOT NULL,
    status          text        NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'PUBLISHED', 'DEAD')),
    attempts        integer     NOT NULL DEFAULT 0,
    last_error      text,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    published_at    timestamptz
);

-- The relay only ever looks at due PENDING rows; a partial index keeps that
-- scan small however many PUBLISHED rows wait for cleanup.
CREATE INDEX outbox_pending_idx ON outbox (next_attempt_at, created_at) WHERE status = 'PENDING';
-- Cleanup deletes PUBLISHED rows by age in bounded batches.
CREATE INDEX outbox_published_idx ON outbox (published_at) WHERE status = 'PUBLISHED';

-- +goose Down
DROP TABLE outbox;
