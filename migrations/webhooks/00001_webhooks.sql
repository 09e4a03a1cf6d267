-- +goose Up
-- The webhooks service's schema: the inbox of the payments events it
-- accepted, the merchants' endpoints, one delivery per (endpoint, event) and
-- every attempt at it, the merchants the delivery claims serve in turn, and
-- the Idempotency-Keys of its API.

-- ---------------------------------------------------------------------------
-- The inbox: every payments event the webhooks service accepted, keyed by
-- the CloudEvent id: the same table as the ledger's, worked by the same code
-- (adapters/postgres/inboxstore). Here it runs in the async mode only: a
-- message is recorded and acknowledged, and the inbox processor applies it
-- by fanning it out into webhook_deliveries in the row's transaction.
CREATE TABLE inbox_messages (
    id              uuid        PRIMARY KEY,
    type            text        NOT NULL,
    -- json, not the ledger's jsonb: json keeps the text it was given, so
    -- the fan-out hands every endpoint the event exactly as published, the
    -- bytes its signature covers (a receiver that hashes or stores the body
    -- sees the producer's); jsonb would reorder keys and respace it.
    payload         json        NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now(),
    -- NULL = recorded but not applied (pending, or of a type this version does not handle).
    processed_at    timestamptz,
    error           text,
    attempts        integer     NOT NULL DEFAULT 0,
    -- NULL: due now. Set after a failed attempt to the time of the next one.
    next_attempt_at timestamptz,
    -- Set when the row ran out of attempts, or can never apply.
    parked_at       timestamptz,
    -- The trace id of the message (from its traceparent); NULL without one.
    trace_id        text
);
CREATE INDEX inbox_messages_pending_idx ON inbox_messages (received_at)
    WHERE processed_at IS NULL AND parked_at IS NULL;
CREATE INDEX inbox_messages_parked_idx ON inbox_messages (parked_at)
    WHERE parked_at IS NOT NULL;
CREATE INDEX inbox_messages_received_at_idx ON inbox_messages (received_at);

-- ---------------------------------------------------------------------------
-- A merchant's webhook endpoints. The signing secrets are stored sealed
-- (AES-256-GCM under WEBHOOKS_SECRETS_KEY, the endpoint id as associated
-- data), never in the clear: a copy of this table signs nothing.
CREATE TABLE webhook_endpoints (
    id                  text        PRIMARY KEY CHECK (id ~ '^we_[0-9a-f]{32}$'),
    merchant_id         text        NOT NULL CHECK (merchant_id <> ''),
    url                 text        NOT NULL CHECK (url ~ '^https?://'),
    description         text        NOT NULL DEFAULT '',
    -- Event types, or '*' alone for every type, the later ones included.
    enabled_events      text[]      NOT NULL CHECK (
        cardinality(enabled_events) > 0
        AND array_position(enabled_events, NULL) IS NULL
        AND ('*' <> ALL(enabled_events) OR cardinality(enabled_events) = 1)),
    status              text        NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
    disabled_reason     text,
    secret_current      bytea       NOT NULL,
    -- The secret a rotation replaced, still signing beside the current one
    -- until previous_expires_at.
    secret_previous     bytea,
    previous_expires_at timestamptz,
    created_at          timestamptz NOT NULL,
    deleted_at          timestamptz,
    -- When the unbroken run of failed attempts began; NULL after a success.
    failing_since       timestamptz,
    -- The unbroken run of attempts that got no answer in time. While it is
    -- above zero the endpoint has one attempt in flight at most, and a
    -- shorter attempt budget (the worker's); any answer sets it back to zero.
    timeouts            integer     NOT NULL DEFAULT 0 CHECK (timeouts >= 0),
    CONSTRAINT webhook_endpoints_disabled_has_reason CHECK ((status = 'disabled') = (disabled_reason IS NOT NULL)),
    CONSTRAINT webhook_endpoints_previous_expires CHECK ((secret_previous IS NULL) = (previous_expires_at IS NULL))
);
-- The merchant's list, newest first (keyset on created_at, id).
CREATE INDEX webhook_endpoints_list_idx ON webhook_endpoints (merchant_id, created_at DESC, id DESC)
    WHERE deleted_at IS NULL;
CREATE INDEX webhook_endpoints_all_idx ON webhook_endpoints (created_at DESC, id DESC)
    WHERE deleted_at IS NULL;

-- ---------------------------------------------------------------------------
-- Deliveries, claimed fairly: the claim serves merchants in turn, each within
-- its share of the delivery workers, and counts leases without reading the
-- backlog (docs/WEBHOOKS.md "Fair delivery").
--
-- One row per merchant that has had an endpoint. served orders the claim:
-- the merchant served longest ago goes first, and each claim that leases
-- for a merchant moves it to the back (round robin). The row is also what
-- serialises the claims of one merchant (and the creation of its
-- endpoints, under its cap): a claim locks it FOR NO KEY UPDATE SKIP
-- LOCKED, then counts the merchant's leases in a later statement, whose
-- snapshot sees every lease committed before the lock was granted.
CREATE SEQUENCE webhook_merchants_served_seq;
CREATE TABLE webhook_merchants (
    merchant_id text   PRIMARY KEY CHECK (merchant_id <> ''),
    served      bigint NOT NULL DEFAULT 0
);
CREATE INDEX webhook_merchants_served_idx ON webhook_merchants (served, merchant_id);

-- One row per (endpoint, event): the fan-out writes them in the inbox row's
-- transaction, and the delivery workers work them. The unique pair is the
-- second layer of idempotency: an event fanned out twice delivers once.
-- payload holds the event's bytes as the inbox handed them to the fan-out,
-- signed and sent unchanged on every attempt.
CREATE TABLE webhook_deliveries (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id     text        NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id        uuid        NOT NULL,
    event_type      text        NOT NULL CHECK (event_type <> ''),
    payload         bytea       NOT NULL CHECK (length(payload) > 0),
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'parked', 'canceled')),
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    created_at      timestamptz NOT NULL,
    -- When the next attempt is due; only a pending delivery has one.
    next_attempt_at timestamptz,
    -- The lease of the worker sending it: another worker claims it only once
    -- this has passed (a crash mid-attempt). Only a pending delivery has one.
    locked_until    timestamptz,
    last_error      text,
    delivered_at    timestamptz,
    -- The merchant of the delivery, its endpoint's, written by the fan-out:
    -- a merchant's leases and due deliveries are then one index range each.
    merchant_id     text        NOT NULL,
    CONSTRAINT webhook_deliveries_once UNIQUE (endpoint_id, event_id),
    CONSTRAINT webhook_deliveries_pending_is_due CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL)),
    CONSTRAINT webhook_deliveries_lease_when_pending CHECK (locked_until IS NULL OR status = 'pending'),
    CONSTRAINT webhook_deliveries_delivered_at CHECK ((status = 'delivered') = (delivered_at IS NOT NULL)),
    CONSTRAINT webhook_deliveries_parked_tried CHECK (status <> 'parked' OR attempts > 0)
);
-- Whether a merchant has a due delivery: the claim's first, cheapest probe.
CREATE INDEX webhook_deliveries_merchant_due_idx ON webhook_deliveries (merchant_id, next_attempt_at)
    WHERE status = 'pending';
-- An endpoint's due deliveries in the claim's order (next_attempt_at, id),
-- so that leasing the oldest few reads those few.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (endpoint_id, next_attempt_at, id)
    WHERE status = 'pending';
-- The leases, counted per merchant and per endpoint. Only leased rows are in
-- it (a finished or released delivery's lease is NULL), so a count reads the
-- attempts in flight, never the backlog; an expired lease stays until the
-- delivery is claimed again, which is soon: it is due.
CREATE INDEX webhook_deliveries_leased_idx ON webhook_deliveries (merchant_id, endpoint_id, locked_until)
    WHERE status = 'pending' AND locked_until IS NOT NULL;
-- Recover: an endpoint's undelivered deliveries, oldest first.
CREATE INDEX webhook_deliveries_recover_idx ON webhook_deliveries (endpoint_id, created_at, id)
    WHERE status IN ('pending', 'parked');
CREATE INDEX webhook_deliveries_parked_idx ON webhook_deliveries (endpoint_id)
    WHERE status = 'parked';
-- Retention deletes finished deliveries by age.
CREATE INDEX webhook_deliveries_created_at_idx ON webhook_deliveries (created_at);

-- ---------------------------------------------------------------------------
-- Every attempt to deliver, as the merchant's deliveries list shows it.
CREATE TABLE webhook_attempts (
    id           text        PRIMARY KEY CHECK (id ~ '^wa_[0-9a-f]{32}$'),
    delivery_id  bigint      NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    endpoint_id  text        NOT NULL,
    attempted_at timestamptz NOT NULL,
    -- NULL when no answer came (a timeout, a refused or broken connection).
    status_code  integer     CHECK (status_code BETWEEN 100 AND 599),
    latency_ms   bigint      NOT NULL CHECK (latency_ms >= 0),
    error        text,
    outcome      text        NOT NULL CHECK (outcome IN ('delivered', 'failed', 'gone', 'refused')),
    CONSTRAINT webhook_attempts_delivered_2xx CHECK (outcome <> 'delivered' OR status_code BETWEEN 200 AND 299),
    CONSTRAINT webhook_attempts_gone_410 CHECK (outcome <> 'gone' OR status_code = 410),
    CONSTRAINT webhook_attempts_refused_unanswered CHECK (outcome <> 'refused' OR status_code IS NULL),
    CONSTRAINT webhook_attempts_failed_has_error CHECK ((outcome = 'delivered') = (error IS NULL))
);
-- An endpoint's attempts, newest first (attempt ids are time-ordered).
CREATE INDEX webhook_attempts_endpoint_idx ON webhook_attempts (endpoint_id, id DESC);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id);

-- ---------------------------------------------------------------------------
-- Idempotency-Keys of the API's writes, scoped to the merchant, written in
-- the transaction of the write. A replay never answers an endpoint's secret
-- again: the key does not keep the one the first answer showed. answer is
-- the first answer of an operation whose replay is not the endpoint as it is
-- now (a recovery's counts), as the store encodes it; NULL for the others.
CREATE TABLE webhook_idempotency_keys (
    merchant_id text        NOT NULL,
    key         text        NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    fingerprint text        NOT NULL,
    endpoint_id text        NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL,
    answer      jsonb,
    PRIMARY KEY (merchant_id, key)
);
CREATE INDEX webhook_idempotency_keys_created_at_idx ON webhook_idempotency_keys (created_at);

-- +goose Down
-- Everything the Up made, and the rows in it: for an empty database only.
DROP TABLE webhook_idempotency_keys;
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_merchants;
DROP SEQUENCE webhook_merchants_served_seq;
DROP TABLE webhook_endpoints;
DROP TABLE inbox_messages;
