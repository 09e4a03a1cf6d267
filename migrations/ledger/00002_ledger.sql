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

-- The database-level guard that every ledger transaction balances: at commit,
-- each touched transaction must have at least two entries and sum to zero in
-- every currency, whatever code wrote it. The triggers are deferred so that a
-- transaction and its entries can be inserted in any order within one commit.
-- +goose StatementBegin
CREATE FUNCTION ledger_check_balanced() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    txid bigint;
    legs bigint;
BEGIN
    IF TG_TABLE_NAME = 'ledger_transactions' THEN
        txid := NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        txid := OLD.transaction_id;
    ELSE
        txid := NEW.transaction_id;
    END IF;
    -- A deleted transaction has nothing left to balance.
    IF NOT EXISTS (SELECT 1 FROM ledger_transactions WHERE id = txid) THEN
        RETURN NULL;
    END IF;
    SELECT count(*) INTO legs FROM ledger_entries WHERE transaction_id = txid;
    IF legs < 2 THEN
        RAISE EXCEPTION 'ledger transaction % has % entries, needs at least 2', txid, legs
            USING ERRCODE = 'check_violation';
    END IF;
    IF EXISTS (SELECT 1 FROM ledger_entries WHERE transaction_id = txid
               GROUP BY currency HAVING sum(amount) <> 0) THEN
        RAISE EXCEPTION 'ledger transaction % does not balance', txid
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

CREATE CONSTRAINT TRIGGER ledger_entries_balanced
    AFTER INSERT OR UPDATE OR DELETE ON ledger_entries
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ledger_check_balanced();

-- +goose Down
DROP TABLE ledger_entries;
DROP TABLE ledger_transactions;
DROP FUNCTION ledger_check_balanced();
