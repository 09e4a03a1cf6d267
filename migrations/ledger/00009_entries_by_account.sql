-- +goose NO TRANSACTION
-- +goose Up
-- GET /accounts/{id}/entries pages an account's entries newest first by
-- keyset (application/ledgers/entries.go): WHERE account_id = $1 AND
-- id < (cursor) ORDER BY id DESC LIMIT n. This index is that order, so a
-- page is one index range however long the account's history.
--
-- 00006 dropped the account index balances no longer needed, to spare
-- every posting its inserts; a listing cannot be served without one, so
-- this one is the narrowest that serves it: one insert per entry, no
-- INCLUDE columns (the page's rows are read by id).
--
-- CONCURRENTLY, so that building it does not hold up the postings
-- meanwhile; it cannot run in a transaction, hence NO TRANSACTION. A build
-- interrupted half-way leaves an INVALID index of this name behind, which
-- the DROP clears before the migration is run again.
DROP INDEX CONCURRENTLY IF EXISTS ledger_entries_account_id_idx;
CREATE INDEX CONCURRENTLY ledger_entries_account_id_idx ON ledger_entries (account_id, id DESC);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS ledger_entries_account_id_idx;
