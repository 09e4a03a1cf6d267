-- +goose Up
-- The payments service's schema: the payment aggregate and its refunds, the
-- idempotency keys and API keys that guard the API, the ledger_facts view
-- that `ledger reconcile` reads, and the transactional outbox with its
-- partitioned relay. The CHECKs are the last line of defence
-- behind the domain's rules and the row lock: whatever code writes these
-- tables, a row the domain would refuse never commits.

-- ---------------------------------------------------------------------------
-- payments: one row per payment, its state and its amounts.
--
-- A payment is captured automatically as it is created (capture_method
-- automatic: amount_captured = amount), or authorized first and captured or
-- canceled later (manual). refunded_amount is the running total of its
-- refunds. The amounts keep
--     0 <= refunded_amount <= amount_captured <= amount,
-- and the columns of each stage are set exactly when the payment has
-- reached it. The state machine itself is the domain's
-- (domain/payment/lifecycle.go).
CREATE TABLE payments (
    id                  uuid        PRIMARY KEY,
    amount              bigint      NOT NULL CHECK (amount > 0),
    refunded_amount     bigint      NOT NULL DEFAULT 0 CHECK (refunded_amount >= 0 AND refunded_amount <= amount),
    currency            text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    status              text        NOT NULL,
    payer_id            text        NOT NULL,
    merchant_id         text        NOT NULL,
    description         text        NOT NULL DEFAULT '',
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    capture_method      text        NOT NULL DEFAULT 'automatic',
    amount_captured     bigint      NOT NULL,
    -- A manual payment's deadline: the expiry job cancels it after this.
    capture_before      timestamptz,
    captured_at         timestamptz,
    canceled_at         timestamptz,
    cancellation_reason text,
    CONSTRAINT payments_status_check
        CHECK (status IN ('created', 'authorized', 'captured', 'canceled', 'partially_refunded', 'refunded')),
    CONSTRAINT payments_capture_method_check CHECK (capture_method IN ('automatic', 'manual')),
    CONSTRAINT payments_amount_captured_check CHECK (amount_captured >= 0 AND amount_captured <= amount),
    CONSTRAINT payments_refunded_captured_check CHECK (refunded_amount <= amount_captured),
    -- An automatic payment has no stage of a manual one; a manual one has a
    -- deadline, and a capture (amount and time) once it is captured. That an
    -- automatic payment's amount_captured is its amount is the domain's
    -- rule (payment.Rehydrate refuses a row that breaks it), not one more
    -- CHECK: what money moved is ledger_facts' amount, which is amount.
    CONSTRAINT payments_capture_check CHECK (CASE capture_method
        WHEN 'automatic' THEN status IN ('created', 'partially_refunded', 'refunded')
            AND capture_before IS NULL AND captured_at IS NULL
        ELSE status <> 'created' AND capture_before IS NOT NULL
            AND (status IN ('authorized', 'canceled')) = (amount_captured = 0)
            AND (captured_at IS NULL) = (amount_captured = 0)
        END),
    CONSTRAINT payments_cancellation_check CHECK (
        (status = 'canceled') = (canceled_at IS NOT NULL)
        AND (status = 'canceled') = (cancellation_reason IS NOT NULL)
        AND cancellation_reason IN ('requested_by_customer', 'duplicate', 'fraudulent', 'abandoned', 'expired')),
    -- The status says how much of the capture was refunded, and the amounts
    -- must say the same: nothing before the first refund, some but not all
    -- of the capture while partially_refunded, all of it once refunded.
    -- Without it a row could be refunded with money left, or created with
    -- money already refunded. (CHECKs run in the order of their names:
    -- payments_refunded_captured_check, the plainer rule, answers first for
    -- a refund past the capture.)
    CONSTRAINT payments_status_refunded_check CHECK (CASE status
        WHEN 'partially_refunded' THEN refunded_amount > 0 AND refunded_amount < amount_captured
        WHEN 'refunded' THEN refunded_amount > 0 AND refunded_amount = amount_captured
        ELSE refunded_amount = 0
        END)
);

-- GET /payments pages a merchant's payments newest first by keyset
-- (application/payments/list.go): WHERE merchant_id = $1 AND (created_at, id)
-- < (cursor) ORDER BY created_at DESC, id DESC LIMIT n. This index is that
-- order, so a page is one index range however deep the client has paged;
-- the status and created filters are checked on the rows the range visits.
CREATE INDEX payments_merchant_created_idx ON payments (merchant_id, created_at DESC, id DESC);
-- The expiry job's listing: authorized payments by deadline. Partial, so it
-- holds only the payments waiting for a capture.
CREATE INDEX payments_authorized_capture_before_idx ON payments (capture_before) WHERE status = 'authorized';

-- A payment's refunds, one row each.
CREATE TABLE refunds (
    id         uuid PRIMARY KEY,
    payment_id uuid        NOT NULL REFERENCES payments (id),
    amount     bigint      NOT NULL CHECK (amount > 0),
    created_at timestamptz NOT NULL
);
CREATE INDEX refunds_payment_id_idx ON refunds (payment_id);

-- ---------------------------------------------------------------------------
-- idempotency_keys: client idempotency keys (the Idempotency-Key header).
-- The row is written in the same transaction as the payment it created, so a
-- key exists if and only if its effect committed. result is the snapshot the
-- first response was rendered from. Keys are scoped to the merchant a request
-- acts for: two merchants may use the same key without colliding, and one
-- never sees the other's replay.
CREATE TABLE idempotency_keys (
    key         text        NOT NULL,
    fingerprint text        NOT NULL,
    payment_id  uuid        NOT NULL,
    result      jsonb       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    merchant_id text        NOT NULL,
    CONSTRAINT idempotency_keys_pkey PRIMARY KEY (merchant_id, key)
);
-- Retention deletes expired keys by age.
CREATE INDEX idempotency_keys_created_at_idx ON idempotency_keys (created_at);

-- ---------------------------------------------------------------------------
-- api_keys. Only the SHA-256 of a key is kept (hash), never the key: the
-- secret part is 256 random bits, so a fast hash is enough, and a request is
-- authenticated by one index lookup on it. id and prefix are the key's public
-- part (pk_test_<id>, pk_live_plat_<id>), what `payments apikey list` shows.
-- A platform key acts for every merchant and has none; a merchant key has one.
CREATE TABLE api_keys (
    id           text        PRIMARY KEY,
    prefix       text        NOT NULL,
    hash         bytea       NOT NULL UNIQUE CHECK (length(hash) = 32),
    platform     boolean     NOT NULL,
    merchant_id  text,
    name         text        NOT NULL,
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz,
    CHECK (platform = (merchant_id IS NULL))
);

-- ---------------------------------------------------------------------------
-- ledger_facts: every fact this service asserts the ledger must have posted,
-- one row each. `ledger reconcile` reads this view and nothing else of this
-- database.
--
-- The payments service owns its schema, so it states here, in one place,
-- which of its rows are facts of which kind; the ledger never learns our
-- tables. The role reconcile connects as needs SELECT on this view alone (a
-- view reads its tables with its owner's rights): GRANT SELECT ON
-- ledger_facts TO <role>.
--
--   payment_id   the payment the fact belongs to
--   kind         the ledger's kind of fact
--   fact_id      tells apart the facts of one kind on a payment (a refund's
--                id); NULL for a kind a payment has at most once
--   amount       minor units of currency
--   occurred_at  when the fact happened: reconcile expects it in the ledger
--                once its grace period has passed
--   merchant_id, payer_id
--                the fact's parties: the merchant (from the API key that
--                created the payment) and the payer as that merchant knows
--                it. The ledger's registry declares, kind by kind, which
--                role's account a fact debits and which it credits
--                (ledger.Postings); with the parties reconcile derives the
--                accounts each fact must have moved money between, so a fact
--                posted the wrong way, or to another payer's account, is a
--                divergence.
--
-- The kinds:
--   payment       an automatic payment: money the payer paid the merchant
--   authorization a manual payment was authorized: a hold of its amount for
--                 the merchant, no money moved; every manual payment was one
--   capture       a manual payment was captured: amount_captured moved, at
--                 captured_at
--   cancellation  a manual payment was canceled: its whole hold released, no
--                 money moved, at canceled_at
--   refund        one refund, of either kind of payment
-- A captured payment later refunded stays a capture (and an authorization),
-- as an automatic one stays a payment. Each branch names the statuses in
-- which its rows are facts, so a new status is no fact until its migration
-- decides what it is; the decision, status by status and kind by kind, is
-- the table of ledgerstore's TestEveryStatusHasAReconcileRule, which reads
-- this view.
--
-- A new kind of fact (one the ledger's registry posts, in
-- application/ledgers/events.go) adds a UNION ALL branch, in the migration
-- that adds what the kind is stored in (a status, a table): CREATE OR REPLACE
-- VIEW with the whole query, these columns first and in this order (a new
-- column goes last, so the view is replaced in place). The grant stays.
-- Write each branch's kind as a string constant: a test reads the kinds from
-- the view's definition and checks them against the registry's.
CREATE VIEW ledger_facts (payment_id, kind, fact_id, amount, currency, occurred_at, merchant_id, payer_id) AS
    SELECT id, 'payment', NULL::uuid, amount, currency, created_at, merchant_id, payer_id
    FROM payments
    WHERE capture_method = 'automatic' AND status IN ('created', 'partially_refunded', 'refunded')
    UNION ALL
    SELECT id, 'authorization', NULL::uuid, amount, currency, created_at, merchant_id, payer_id
    FROM payments
    WHERE capture_method = 'manual'
    UNION ALL
    SELECT id, 'capture', NULL::uuid, amount_captured, currency, captured_at, merchant_id, payer_id
    FROM payments
    WHERE capture_method = 'manual' AND status IN ('captured', 'partially_refunded', 'refunded')
    UNION ALL
    SELECT id, 'cancellation', NULL::uuid, amount, currency, canceled_at, merchant_id, payer_id
    FROM payments
    WHERE status = 'canceled'
    UNION ALL
    SELECT r.payment_id, 'refund', r.id, r.amount, p.currency, r.created_at, p.merchant_id, p.payer_id
    FROM refunds r JOIN payments p ON p.id = r.payment_id;

-- ---------------------------------------------------------------------------
-- The transactional outbox: one row per domain event, written in the same
-- transaction as the state change it describes. id is the message id that
-- consumers use as their idempotency key.
--
-- Every row belongs to one partition, derived from its aggregate id; relay
-- replicas divide the partitions between them with leases (outbox_leases),
-- and each claims only from the partitions it holds, so claims of different
-- replicas do not step over each other's locked rows in one shared index.
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

-- seq is the order in which rows were written. A writer inserts an
-- aggregate's event while it holds the aggregate's row lock (the payment's
-- SELECT … FOR UPDATE), so for one aggregate seq is also commit order;
-- created_at is not (it is the transaction's start). The sequence must keep
-- CACHE 1: a cache per session would hand out numbers out of order.
CREATE SEQUENCE outbox_seq AS bigint CACHE 1;

CREATE TABLE outbox (
    id              uuid        PRIMARY KEY,
    type            text        NOT NULL,
    aggregate_id    uuid        NOT NULL,
    -- The event's bytes as the write side encoded them; the relay publishes
    -- those bytes, so a consumer that hashes, signs or compares an event sees
    -- what the producer's encoder wrote (docs/events). json, not jsonb: json
    -- stores the input text exactly and only checks that it is JSON, so the
    -- database still refuses a payload no consumer could parse, and ad-hoc
    -- queries keep -> and ->>; jsonb would give back its own text, keys
    -- reordered and spaced.
    payload         json        NOT NULL,
    status          text        NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'PUBLISHED', 'DEAD')),
    attempts        integer     NOT NULL DEFAULT 0,
    last_error      text,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    published_at    timestamptz,
    seq             bigint      DEFAULT nextval('outbox_seq'),
    -- The W3C trace context of the write that committed the row: the
    -- traceparent and tracestate headers, as text. The relay sends them with
    -- the event and starts its publish span from them, so one trace runs
    -- from the request that wrote the payment to the consumer that applied
    -- its event, however long the row waited and whichever replica
    -- published it. Empty when the write was not traced.
    traceparent     text        NOT NULL DEFAULT '',
    tracestate      text        NOT NULL DEFAULT ''
);
ALTER SEQUENCE outbox_seq OWNED BY outbox.seq;

-- The relay's claim (adapters/postgres/outboxstore/claim.go): the due
-- PENDING rows, oldest due first,
--     WHERE status = 'PENDING' AND next_attempt_at <= now()
--     ORDER BY next_attempt_at, created_at LIMIT n FOR UPDATE SKIP LOCKED
-- reads this index in its order and stops after n rows; a partial index
-- keeps it small however many PUBLISHED rows wait for cleanup.
CREATE INDEX outbox_pending_idx ON outbox (next_attempt_at, created_at) WHERE status = 'PENDING';
-- The pending indexes per partition, for the partitioned claims. The
-- partition count is part of each index's expression and of its name, so a
-- new count gets new indexes built beside these before the switch, and
-- these are dropped after it (adapters/postgres/outboxstore/partitions.go).
--   partitioned claims: due rows of a partition, oldest due first
CREATE INDEX outbox_pending_p64_idx ON outbox (outbox_partition(aggregate_id, 64), next_attempt_at, created_at)
    WHERE status = 'PENDING';
--   ordered claims: a partition's rows in write order
CREATE INDEX outbox_ordered_p64_idx ON outbox (outbox_partition(aggregate_id, 64), seq)
    WHERE status = 'PENDING';
-- Cleanup deletes PUBLISHED rows by age in bounded batches.
CREATE INDEX outbox_published_idx ON outbox (published_at) WHERE status = 'PUBLISHED';
-- DEAD rows are few but counted often (the outbox_dead_rows gauge, `payments
-- outbox stats`); a partial index keeps that count off the PUBLISHED backlog.
CREATE INDEX outbox_dead_idx ON outbox (type) WHERE status = 'DEAD';

-- The partition count, one row. It lives in the database, not in each
-- replica's environment, because every replica and the indexes above must
-- agree on it. `payments outbox partitions --set N` changes it (README,
-- "Changing the partition count").
CREATE TABLE outbox_partitioning (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    partitions integer NOT NULL CHECK (partitions BETWEEN 1 AND 1024)
);
INSERT INTO outbox_partitioning (partitions) VALUES (64);

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
-- Everything the Up made, and the rows in it: for an empty database only.
DROP TABLE outbox_relays;
DROP TABLE outbox_leases;
DROP TABLE outbox_partitioning;
DROP TABLE outbox; -- and outbox_seq, which it owns
DROP FUNCTION outbox_partition(uuid, integer);
DROP VIEW ledger_facts;
DROP TABLE api_keys;
DROP TABLE idempotency_keys;
DROP TABLE refunds;
DROP TABLE payments;
