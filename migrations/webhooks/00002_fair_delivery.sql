-- +goose Up
-- Fair delivery: the claim serves merchants in turn, each within its share of
-- the delivery workers, and counts leases without reading the backlog
-- (docs/WEBHOOKS.md "Fair delivery").

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
INSERT INTO webhook_merchants (merchant_id) SELECT DISTINCT merchant_id FROM webhook_endpoints;

-- The merchant of each delivery, its endpoint's, written by the fan-out: a
-- merchant's leases and due deliveries are then one index range each.
ALTER TABLE webhook_deliveries ADD COLUMN merchant_id text;
UPDATE webhook_deliveries d SET merchant_id = e.merchant_id FROM webhook_endpoints e WHERE e.id = d.endpoint_id;
ALTER TABLE webhook_deliveries ALTER COLUMN merchant_id SET NOT NULL;

-- An endpoint's due deliveries in the claim's order (next_attempt_at, id),
-- so that leasing the oldest few reads those few.
DROP INDEX webhook_deliveries_due_idx;
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (endpoint_id, next_attempt_at, id)
    WHERE status = 'pending';
-- The claim no longer takes the oldest due delivery of all: this would only
-- tempt the planner into reading every merchant's due rows for one.
DROP INDEX webhook_deliveries_pending_idx;
-- Whether a merchant has a due delivery: the claim's first, cheapest probe.
CREATE INDEX webhook_deliveries_merchant_due_idx ON webhook_deliveries (merchant_id, next_attempt_at)
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

-- An endpoint's unbroken run of attempts that got no answer in time. While
-- it is above zero the endpoint has one attempt in flight at most, and a
-- shorter attempt budget (the worker's); any answer sets it back to zero.
ALTER TABLE webhook_endpoints ADD COLUMN timeouts integer NOT NULL DEFAULT 0 CHECK (timeouts >= 0);

-- An idempotent replay never answers a secret again: the key no longer keeps
-- the one the first answer showed. answer is the first answer of an
-- operation whose replay is not the endpoint as it is now (a recovery's
-- counts), as the store encodes it.
ALTER TABLE webhook_idempotency_keys DROP COLUMN secret;
ALTER TABLE webhook_idempotency_keys ADD COLUMN answer jsonb;

-- +goose Down
ALTER TABLE webhook_idempotency_keys DROP COLUMN answer;
ALTER TABLE webhook_idempotency_keys ADD COLUMN secret bytea NOT NULL DEFAULT '\x';
ALTER TABLE webhook_idempotency_keys ALTER COLUMN secret DROP DEFAULT;
ALTER TABLE webhook_endpoints DROP COLUMN timeouts;
DROP INDEX webhook_deliveries_recover_idx;
DROP INDEX webhook_deliveries_leased_idx;
DROP INDEX webhook_deliveries_merchant_due_idx;
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
DROP INDEX webhook_deliveries_due_idx;
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (endpoint_id, next_attempt_at)
    WHERE status = 'pending';
ALTER TABLE webhook_deliveries DROP COLUMN merchant_id;
DROP TABLE webhook_merchants;
DROP SEQUENCE webhook_merchants_served_seq;
