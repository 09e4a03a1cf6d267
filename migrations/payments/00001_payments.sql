-- +goose Up
-- The payment aggregate. refunded_amount is the running total of refunds; the
-- CHECK is the last line of defence behind the domain rule and the row lock.
CREATE TABLE payments (
    id              uuid PRIMARY KEY,
    amount          bigint      NOT NULL CHECK (amount > 0),
    refunded_amount bigint      NOT NULL DEFAULT 0 CHECK (refunded_amount >= 0 AND refunded_amount <= amount),
    currency        text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    status          text        NOT NULL CHECK (status IN ('created', 'partially_refunded', 'refunded')),
    payer_id        text        NOT NULL,
    merchant_id     text        NOT NULL,
    description     text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

CREATE TABLE refunds (
    id         uuid PRIMARY KEY,
    payment_id uuid        NOT NULL REFERENCES payments (id),
    amount     bigint      NOT NULL CHECK (amount > 0),
    created_at timestamptz NOT NULL
);
CREATE INDEX refunds_payment_id_idx ON refunds (payment_id);

-- +goose Down
DROP TABLE refunds;
DROP TABLE payments;
