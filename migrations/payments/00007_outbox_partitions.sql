-- +goose Up
-- Partitioned relay. Every outbox row belongs to one partition, derived from
-- its aggregate id; relay replicas divide the partitions between them with
-- leases (outbox_leases), and each claims only from the partitions it holds,
-- so claims of different replicas no longer step over each other's locked
-- rows in one shared index.
--
-- The partition of a row is outbox_partition(aggregate_id, partitions): the
-- first 4 bytes of the SHA-256 of the aggregate id's 16 bytes, read as an
-- unsigned big-endian integer, modulo the partition count. Computed here, in
-- the indexes, so every writer gets it without knowing about it; documented
-- so that any language can compute the same number (relay.PartitionOf is the
-- Go twin, and a test holds the two together). It must never change: the
-- indexes are built from it.
-- +goose StatementBegin
CREATE FUNCTION outbox_partition(aggregate_id uuid, partitions integer) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ((('x' || encode(substring(sha256(uuid_send(aggregate_id)) FROM 1 FOR 4), 'hex'))::bit(32)::bigint) % partitions)::integer
$$;
-- +goose StatementEnd

-- The partition count, one row. It lives in the database, not in each
-- replica's environment, because every replica and the indexes below must
-- agree on it. `payments outbox partitions --set N` changes it (README,
-- "Changing the partition count").
CREATE TABLE outbox_partitioning (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    partitions integer NOT NULL CHECK (partitions BETWEEN 1 AND 1024)
);
INSERT INTO outbox_partitioning (partitions) VALUES (64);

-- seq is the order in which rows were written. A writer inserts an
-- aggregate's event while it holds the aggregate's row lock (the payment's
-- SELECT … FOR UPDATE), so for one aggregate seq is also commit order;
-- created_at is not (it is the transaction's start). The sequence must keep
-- CACHE 1: a cache per session would hand out numbers out of order.
-- Only rows still to publish get a number here; PUBLISHED rows keep NULL.
CREATE SEQUENCE outbox_seq AS bigint CACHE 1;
ALTER TABLE outbox ADD COLUMN seq bigint;
ALTER TABLE outbox ALTER COLUMN seq SET DEFAULT nextval('outbox_seq');
ALTER SEQUENCE outbox_seq OWNED BY outbox.seq;
UPDATE outbox o SET seq = s.n
FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM outbox WHERE status <> 'PUBLISHED') s
WHERE o.id = s.id;
SELECT setval('outbox_seq', COALESCE((SELECT max(seq) FROM outbox), 0) + 1, false);

-- The pending indexes, per partition. The partition count is part of each
-- index's expression and of its name, so a new count gets new indexes built
-- beside these before the switch, and these are dropped after it.
--   unordered claims: due rows of a partition, oldest due first
CREATE INDEX outbox_pending_p64_idx ON outbox (outbox_partition(aggregate_id, 64), next_attempt_at, created_at)
    WHERE status = 'PENDING';
--   ordered claims: a partition's rows in write order
CREATE INDEX outbox_ordered_p64_idx ON outbox (outbox_partition(aggregate_id, 64), seq)
    WHERE status = 'PENDING';
DROP INDEX outbox_pending_idx;

-- Leases: which relay replica holds which partition, until when. owner is
-- NULL for a partition nobody holds. A replica renews its leases by
-- heartbeat; a partition whose lease expired is free to take.
CREATE TABLE outbox_leases (
    partition  integer PRIMARY KEY CHECK (partition >= 0),
    owner      text,
    expires_at timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO outbox_leases (partition) SELECT generate_series(0, 63);

-- The relay replicas alive, each renewed by the same heartbeat: a replica's
-- fair share of the partitions is the count divided by the replicas here.
-- heartbeat_at tells a change of the partition count when every replica has
-- read the new count.
CREATE TABLE outbox_relays (
    id           text PRIMARY KEY,
    heartbeat_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL
);

-- +goose Down
DROP TABLE outbox_relays;
DROP TABLE outbox_leases;
CREATE INDEX outbox_pending_idx ON outbox (next_attempt_at, created_at) WHERE status = 'PENDING';
-- +goose StatementBegin
DO $$
DECLARE i text;
BEGIN
    FOR i IN SELECT indexname FROM pg_indexes WHERE tablename = 'outbox' AND indexname ~ '^outbox_(pending|ordered)_p[0-9]+_idx$' LOOP
        EXECUTE format('DROP INDEX %I', i);
    END LOOP;
END $$;
-- +goose StatementEnd
ALTER TABLE outbox DROP COLUMN seq;
DROP TABLE outbox_partitioning;
DROP FUNCTION outbox_partition(uuid, integer);
