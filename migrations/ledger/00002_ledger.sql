-- +goose Up
-- One row per posted business fact. Two UNIQUE constraints make posting
-- idempotent even without the inbox (the second layer of idempotency): the
-- message id, and the business key (payment, kind, refund). A refund's key
-- includes its refund id; a payment's refund_id is NULL, and NULLS NOT
-- DISTINCT (Postgres 15) makes two payment rows for one payment collide.
CREATE TABLE ledger_transactions (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id  uuid        NOT NULL,
    payment_id  uuid        NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('payment', 'refund')),
    refund_id   uuid,
    amount      bigint      NOT NULL CHECK (amount > 0),
    currency    text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    occurred_at timestamptz NOT NULL,
    posted_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ledger_transactions_message_id_key UNIQUE (message_id),
    CONSTRAINT ledger_transactions_business_key UNIQUE NULLS NOT DISTINCT (payment_id, kind, refund_id),
    CONSTRAINT ledger_transactions_refund_id_check CHECK ((kind = 'refund') = (refund_id IS NOT NULL))
);

-- The legs of each transaction: signed amounts, debits negative.
CREATE TABLE ledger_entries (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    transaction_id bigint NOT NULL REFERENCES ledger_transactions (id),
    account_id     text   NOT NULL CHECK (account_id <> ''),
    amount         bigint NOT NULL CHECK (amount <> 0),
    currency       text   NOT NULL CHECK (currency ~ '^[A-Z]{3}$')
);
CREATE INDEX ledger_entries_transaction_id_idx ON ledger_entries (transaction_id);
-- Balances are sums over an account's entries; the INCLUDE columns let the
-- sum come from the index alone.
CREATE INDEX ledger_entries_account_idx ON ledger_entries (account_id, currency) INCLUDE (amount);

-- The database-level guard that every ledger transaction balances, whatever
-- code writes to these tables:
--
-- 1. At commit, each new transaction must have at least two entries and sum to
--    zero in every currency. The trigger is deferred, so a transaction and its
--    entries can be written by separate statements within one commit.
-- 2. Entries are written together with their transaction, never added later:
--    an entry whose transaction was committed by an earlier database
--    transaction is refused (check 1 has already passed for it).
-- 3. The ledger is append-only: a correction is a new transaction, never an
--    UPDATE or DELETE of history.
--
-- Checks 2 and 3 cost nothing per entry on the normal path (one statement-level
-- check, and a trigger that never fires), which keeps the consumer fast.
-- +goose StatementBegin
CREATE FUNCTION ledger_check_balanced() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    legs     bigint;
    balanced boolean;
BEGIN
    SELECT coalesce(sum(n), 0), coalesce(bool_and(total = 0), false) INTO legs, balanced
    FROM (SELECT count(*) AS n, sum(amount) AS total
          FROM ledger_entries WHERE transaction_id = NEW.id GROUP BY currency) per_currency;
    IF legs < 2 OR NOT balanced THEN
        RAISE EXCEPTION 'ledger transaction % does not balance (% entries)', NEW.id, legs
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE CONSTRAINT TRIGGER ledger_transactions_balanced
    AFTER INSERT ON ledger_transactions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ledger_check_balanced();

-- +goose StatementBegin
CREATE FUNCTION ledger_entries_with_their_transaction() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM new_entries e JOIN ledger_transactions t ON t.id = e.transaction_id
               WHERE t.xmin <> pg_current_xact_id()::xid) THEN
        RAISE EXCEPTION 'ledger entries can only be written together with their transaction'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER ledger_entries_with_their_transaction
    AFTER INSERT ON ledger_entries
    REFERENCING NEW TABLE AS new_entries
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_with_their_transaction();

-- +goose StatementBegin
CREATE FUNCTION ledger_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only; post a correcting transaction instead', TG_TABLE_NAME
        USING ERRCODE = 'check_violation';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER ledger_entries_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON ledger_entries
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();

CREATE TRIGGER ledger_transactions_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON ledger_transactions
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();

-- +goose Down
DROP TABLE ledger_entries;
DROP TABLE ledger_transactions;
DROP FUNCTION ledger_check_balanced();
DROP FUNCTION ledger_entries_with_their_transaction();
DROP FUNCTION ledger_append_only();
