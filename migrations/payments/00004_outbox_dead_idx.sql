-- +goose Up
-- DEAD rows are few but counted often (the outbox_dead_rows gauge, `payments
-- outbox stats`); a partial index keeps that count off the PUBLISHED backlog.
CREATE INDEX outbox_dead_idx ON outbox (type) WHERE status = 'DEAD';

-- +goose Down
DROP INDEX outbox_dead_idx;
