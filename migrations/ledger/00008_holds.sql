-- +goose Up
-- Authorize, capture, cancel (docs/LEDGER.md, "Holds"). An authorized
-- payment moves no money yet: the ledger places a hold of its amount for the
-- merchant, which shows as the merchant's pending balance; a capture posts
-- the captured amount payer → merchant and releases the whole hold; a
-- cancellation releases it.
--
-- ledger_payments is what the ledger knows of each payment it has seen: its
-- hold, and what was posted (captured) and refunded for it. The limits are
-- the database's, whatever code writes the row: a hold never below zero nor
-- above what was authorized, a capture never above the authorization, and
-- refunds never above what was captured — so a refund for more than the
-- payment's posted amount can never commit. One row per payment, read and
-- written by primary key: no rule here sums history.
--
-- amount_authorized is NULL for a payment captured at once (capture_method
-- automatic, payment.created): it never had a hold, and what it captured is
-- its amount.
CREATE TABLE ledger_payments (
    payment_id        uuid        PRIMARY KEY,
    merchant_account  text        NOT NULL CHECK (merchant_account ~ '^merchant:[-A-Za-z0-9._~%]+$'),
    currency          text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    amount_authorized bigint      CHECK (amount_authorized > 0),
    held              bigint      NOT NULL DEFAULT 0,
    amount_captured   bigint      NOT NULL DEFAULT 0,
    amount_refunded   bigint      NOT NULL DEFAULT 0,
    placed_at         timestamptz,
    captured_at       timestamptz,
    released_at       timestamptz,
    updated_at        timestamptz NOT NULL,
    CONSTRAINT ledger_payments_held_check CHECK (held >= 0 AND held <= coalesce(amount_authorized, 0)),
    CONSTRAINT ledger_payments_captured_check CHECK (amount_captured >= 0 AND amount_captured <= coalesce(amount_authorized, amount_captured)),
    CONSTRAINT ledger_payments_refunded_check CHECK (amount_refunded >= 0 AND amount_refunded <= amount_captured),
    -- A hold is placed with its authorization, and released once: by the
    -- capture or by the cancellation. While it is open it holds the whole
    -- authorized amount; once released, nothing.
    CONSTRAINT ledger_payments_hold_check CHECK (
        (amount_authorized IS NULL AND placed_at IS NULL AND released_at IS NULL AND held = 0)
        OR (amount_authorized IS NOT NULL AND placed_at IS NOT NULL
            AND (released_at IS NULL) = (held = amount_authorized)
            AND (released_at IS NULL OR released_at >= placed_at)))
);

-- The balance as of a past time subtracts what happened since: the holds
-- placed or released after it (these indexes), and the transactions posted
-- after it (posted_at, below).
CREATE INDEX ledger_payments_placed_idx ON ledger_payments (merchant_account, currency, placed_at) WHERE placed_at IS NOT NULL;
CREATE INDEX ledger_payments_released_idx ON ledger_payments (merchant_account, currency, released_at) WHERE released_at IS NOT NULL;
-- ledger_transactions is append-only and posted_at grows with its rows: a
-- BRIN index finds the recent ones for the cost of a few pages per posting,
-- where a B-tree would add an index insert to every one.
CREATE INDEX ledger_transactions_posted_at_brin ON ledger_transactions USING brin (posted_at);

-- Pending sits beside posted: the sum of the merchant's open holds in the
-- currency. available is posted (what captured and automatic payments and
-- refunds moved); pending never counts in it.
ALTER TABLE ledger_balances ADD COLUMN pending bigint NOT NULL DEFAULT 0;
ALTER TABLE ledger_balances ADD CONSTRAINT ledger_balances_pending_check CHECK (pending >= 0);

-- A hold moves pending at commit, as a posting moves posted (00006): a
-- deferred trigger per change of a payment's hold adds the change to the
-- merchant's balance row. Deferred for the same reason: the row is locked
-- for the commit alone, not from the batch's first hold to its commit. The
-- deferred triggers of a commit fire in the order their rows were written,
-- and the processor applies a batch by (merchant, currency, payer), a hold
-- touching only the merchant's row of its currency: two commits still take
-- the rows they share in the same order. A pending sum past bigint fails the
-- commit with SQLSTATE 22003, as a balance does (ledger.ErrBalanceLimit).
-- +goose StatementBegin
CREATE FUNCTION ledger_add_pending() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    delta bigint := NEW.held - CASE WHEN TG_OP = 'UPDATE' THEN OLD.held ELSE 0 END;
BEGIN
    IF delta = 0 THEN
        RETURN NULL;
    END IF;
    IF delta < 0 THEN
        -- A release: the row its hold's placing wrote is there. (An upsert
        -- would check its proposed row, pending < 0, before the conflict.)
        UPDATE ledger_balances SET pending = pending + delta
        WHERE account_id = NEW.merchant_account AND currency = NEW.currency;
        RETURN NULL;
    END IF;
    INSERT INTO ledger_balances AS b (account_id, currency, posted, pending)
    VALUES (NEW.merchant_account, NEW.currency, 0, delta)
    ON CONFLICT (account_id, currency) DO UPDATE SET pending = CASE
        WHEN b.pending::numeric + EXCLUDED.pending BETWEEN -9223372036854775808 AND 9223372036854775807
        THEN b.pending + EXCLUDED.pending
        ELSE ledger_balance_limit(b.account_id, b.currency) END;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE CONSTRAINT TRIGGER ledger_payments_pending
    AFTER INSERT OR UPDATE OF held ON ledger_payments
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ledger_add_pending();

-- A payment's row outlives every change of it: deleting one would forget
-- what was refunded, and let a refund past the captured amount through.
CREATE TRIGGER ledger_payments_kept
    BEFORE DELETE OR TRUNCATE ON ledger_payments
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();

-- Payments posted before this migration (all automatic): their captured
-- amount is their payment's, their refunds what was refunded, so a refund
-- after the upgrade is held to the same limit. Postings wait for the fill.
LOCK TABLE ledger_entries IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO ledger_payments (payment_id, merchant_account, currency, amount_captured, amount_refunded, updated_at)
SELECT t.payment_id, m.account_id, t.currency,
       coalesce(sum(t.amount) FILTER (WHERE t.kind = 'payment'), 0),
       -- A refund posted before its payment, or refunds past it, predate the
       -- rule: they keep their entries, and the payment's row starts at its
       -- limit.
       least(coalesce(sum(t.amount) FILTER (WHERE t.kind = 'refund'), 0),
             coalesce(sum(t.amount) FILTER (WHERE t.kind = 'payment'), 0)),
       max(t.posted_at)
FROM ledger_transactions t
JOIN ledger_entries m ON m.transaction_id = t.id AND m.account_id LIKE 'merchant:%'
WHERE t.kind IN ('payment', 'refund')
GROUP BY t.payment_id, m.account_id, t.currency
ON CONFLICT (payment_id) DO NOTHING;

-- +goose Down
DROP TRIGGER ledger_payments_pending ON ledger_payments;
DROP FUNCTION ledger_add_pending();
DROP TABLE ledger_payments;
ALTER TABLE ledger_balances DROP CONSTRAINT ledger_balances_pending_check;
ALTER TABLE ledger_balances DROP COLUMN pending;
DROP INDEX ledger_transactions_posted_at_brin;
