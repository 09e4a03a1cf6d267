-- +goose Up
-- Client idempotency keys (the Idempotency-Key header). The row is written in the
-- same transaction as the payment it created, so a key exists if and only if its
-- effect committed. result is the snapshot the first response was rendered from.
CREATE TABLE idempotency_keys (
    key         text        PRIMARY KEY,
    fingerprint text        NOT NULL,
    payment_id  uuid        NOT NULL,
    result      jsonb       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idempotency_keys_created_at_idx ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
