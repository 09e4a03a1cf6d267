-- +goose NO TRANSACTION
-- +goose Up
-- The relay's claim (adapters/postgres/outboxstore/claim.go): the due
-- PENDING rows, oldest due first,
--     WHERE status = 'PENDING' AND next_attempt_at <= now()
--     ORDER BY next_attempt_at, created_at LIMIT n FOR UPDATE SKIP LOCKED
-- reads this index in its order and stops after n rows; a partial index
-- keeps it small however many PUBLISHED rows wait for cleanup. (00007 had
-- replaced it with one per partition count; ordered mode's claims still use
-- those.)
--
-- CONCURRENTLY, so that building it on a live table does not block the
-- writes meanwhile; it cannot run in a transaction, hence NO TRANSACTION. A
-- build interrupted half-way leaves an INVALID index of this name behind,
-- which the DROP clears before the migration is run again.
DROP INDEX CONCURRENTLY IF EXISTS outbox_pending_idx;
CREATE INDEX CONCURRENTLY outbox_pending_idx ON outbox (next_attempt_at, created_at) WHERE status = 'PENDING';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS outbox_pending_idx;
