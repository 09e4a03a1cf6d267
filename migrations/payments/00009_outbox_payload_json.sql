-- +goose Up
-- The outbox keeps each event's bytes as the write side encoded them, and the
-- relay publishes those bytes: a consumer that hashes, signs or compares an
-- event sees what the producer's encoder wrote (docs/events). jsonb kept a
-- parsed form instead, and gave back its own text, keys reordered and spaced.
--
-- json, not text: json stores the input text exactly and only checks that it
-- is JSON, so the database still refuses a payload no consumer could parse,
-- and ad-hoc queries keep -> and ->> (the jsonb-only operators, ? and @>, are
-- used on no outbox payload). Both keep the previous release working during
-- a rolling update: its writer sends the payload's bytes, which json takes
-- as they are, and its relay reads them back as it read jsonb; each
-- of its connections fails one claim ("cached plan must not change result
-- type"), pgx forgets the statement, and the relay's retry succeeds
-- (paymentstore's TestPreviousReleaseSurvivesThePayloadMigration).
--
-- Changing the type rewrites the table under an ACCESS EXCLUSIVE lock, which
-- holds writers back for as long as the rewrite takes: the PUBLISHED rows
-- waiting for cleanup are most of it. Rows written before keep the text jsonb
-- gave them.
ALTER TABLE outbox ALTER COLUMN payload TYPE json;

-- +goose Down
ALTER TABLE outbox ALTER COLUMN payload TYPE jsonb;
