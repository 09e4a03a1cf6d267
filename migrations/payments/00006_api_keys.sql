-- +goose Up
-- API keys. Only the SHA-256 of a key is kept (hash), never the key: the
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

-- Idempotency keys are scoped to the merchant a request acts for: two
-- merchants may use the same key without colliding, and one never sees the
-- other's replay. Existing keys belong to their payment's merchant.
ALTER TABLE idempotency_keys ADD COLUMN merchant_id text;
UPDATE idempotency_keys k SET merchant_id = p.merchant_id FROM payments p WHERE p.id = k.payment_id;
DELETE FROM idempotency_keys WHERE merchant_id IS NULL; -- no payment: nothing to replay
ALTER TABLE idempotency_keys ALTER COLUMN merchant_id SET NOT NULL;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (merchant_id, key);

-- +goose Down
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
DELETE FROM idempotency_keys a USING idempotency_keys b
    WHERE a.key = b.key AND a.created_at > b.created_at; -- keep one per key
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (key);
ALTER TABLE idempotency_keys DROP COLUMN merchant_id;
DROP TABLE api_keys;
