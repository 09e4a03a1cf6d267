-- +goose NO TRANSACTION
-- +goose Up
-- GET /payments pages a merchant's payments newest first by keyset
-- (application/payments/list.go): WHERE merchant_id = $1 AND (created_at, id)
-- < (cursor) ORDER BY created_at DESC, id DESC LIMIT n. This index is that
-- order, so a page is one index range however deep the client has paged;
-- the status and created filters are checked on the rows the range visits.
--
-- CONCURRENTLY, so that building it on a live table does not block the
-- writes of payments meanwhile; it cannot run in a transaction, hence NO
-- TRANSACTION. A build interrupted half-way leaves an INVALID index of this
-- name behind, which the DROP clears before the migration is run again.
DROP INDEX CONCURRENTLY IF EXISTS payments_merchant_created_idx;
CREATE INDEX CONCURRENTLY payments_merchant_created_idx ON payments (merchant_id, created_at DESC, id DESC);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS payments_merchant_created_idx;
