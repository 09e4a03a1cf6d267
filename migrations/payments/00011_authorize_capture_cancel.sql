-- +goose Up
-- Authorize, then capture: a payment's capture method, and the state of a
-- manual one. An automatic payment captures its whole amount as it is
-- created, so every existing row gets amount_captured = amount, and rows
-- written without the column (by the previous release, during a rolling
-- update) get it from the trigger below. The CHECKs are the last line of
-- defence behind the domain's rules and the row lock: the amounts keep
-- 0 <= refunded_amount <= amount_captured <= amount, and the columns of each
-- stage are set exactly when the payment has reached it.
--
-- Adding amount_captured and setting it rewrites the table and, like the
-- CHECKs and the index, holds its lock while it does: on a large table, run
-- this migration in a quiet hour.
ALTER TABLE payments
    ADD COLUMN capture_method      text NOT NULL DEFAULT 'automatic',
    ADD COLUMN amount_captured     bigint,
    ADD COLUMN capture_before      timestamptz,
    ADD COLUMN captured_at         timestamptz,
    ADD COLUMN canceled_at         timestamptz,
    ADD COLUMN cancellation_reason text;

UPDATE payments SET amount_captured = amount;

-- +goose StatementBegin
CREATE FUNCTION payments_automatic_captures_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.amount_captured IS NULL AND NEW.capture_method = 'automatic' THEN
        NEW.amount_captured := NEW.amount;
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
-- A writer that knows no capture methods inserts automatic payments only:
-- their captured amount is their amount. (NOT NULL is checked after a
-- BEFORE trigger has run.) Drop the trigger once no such writer is left.
CREATE TRIGGER payments_automatic_captures_all BEFORE INSERT ON payments
    FOR EACH ROW EXECUTE FUNCTION payments_automatic_captures_all();

ALTER TABLE payments
    ALTER COLUMN amount_captured SET NOT NULL,
    DROP CONSTRAINT payments_status_check,
    ADD CONSTRAINT payments_status_check
        CHECK (status IN ('created', 'authorized', 'captured', 'canceled', 'partially_refunded', 'refunded')),
    ADD CONSTRAINT payments_capture_method_check CHECK (capture_method IN ('automatic', 'manual')),
    ADD CONSTRAINT payments_amount_captured_check CHECK (amount_captured >= 0 AND amount_captured <= amount),
    ADD CONSTRAINT payments_refunded_captured_check CHECK (refunded_amount <= amount_captured),
    -- An automatic payment has no stage of a manual one; a manual one has a
    -- deadline, and a capture (amount and time) once it is captured. That an
    -- automatic payment's amount_captured is its amount is the domain's
    -- rule (payment.Rehydrate refuses a row that breaks it), not one more
    -- CHECK: what money moved is ledger_facts' amount, which is amount.
    ADD CONSTRAINT payments_capture_check CHECK (CASE capture_method
        WHEN 'automatic' THEN status IN ('created', 'partially_refunded', 'refunded')
            AND capture_before IS NULL AND captured_at IS NULL
        ELSE status <> 'created' AND capture_before IS NOT NULL
            AND (status IN ('authorized', 'canceled')) = (amount_captured = 0)
            AND (captured_at IS NULL) = (amount_captured = 0)
        END),
    ADD CONSTRAINT payments_cancellation_check CHECK (
        (status = 'canceled') = (canceled_at IS NOT NULL)
        AND (status = 'canceled') = (cancellation_reason IS NOT NULL)
        AND cancellation_reason IN ('requested_by_customer', 'duplicate', 'fraudulent', 'abandoned', 'expired'));

-- The expiry job's listing: authorized payments by deadline. Partial, so it
-- holds only the payments waiting for a capture.
CREATE INDEX payments_authorized_capture_before_idx ON payments (capture_before) WHERE status = 'authorized';

-- ledger_facts, kind by kind (00005 says how to extend the view; same
-- columns, same order, same grant):
--   payment       an automatic payment: money the payer paid the merchant
--   authorization a manual payment was authorized: a hold of its amount for
--                 the merchant, no money moved; every manual payment was one
--   capture       a manual payment was captured: amount_captured moved, at
--                 captured_at
--   cancellation  a manual payment was canceled: its whole hold released, no
--                 money moved, at canceled_at
--   refund        one refund, of either kind of payment
-- A captured payment later refunded stays a capture (and an authorization),
-- as an automatic one stays a payment. The table of ledgerstore's
-- TestEveryStatusHasAReconcileRule states the same, status by status.
CREATE OR REPLACE VIEW ledger_facts (payment_id, kind, fact_id, amount, currency, occurred_at) AS
    SELECT id, 'payment', NULL::uuid, amount, currency, created_at
    FROM payments
    WHERE capture_method = 'automatic' AND status IN ('created', 'partially_refunded', 'refunded')
    UNION ALL
    SELECT id, 'authorization', NULL::uuid, amount, currency, created_at
    FROM payments
    WHERE capture_method = 'manual'
    UNION ALL
    SELECT id, 'capture', NULL::uuid, amount_captured, currency, captured_at
    FROM payments
    WHERE capture_method = 'manual' AND status IN ('captured', 'partially_refunded', 'refunded')
    UNION ALL
    SELECT id, 'cancellation', NULL::uuid, amount, currency, canceled_at
    FROM payments
    WHERE status = 'canceled'
    UNION ALL
    SELECT r.payment_id, 'refund', r.id, r.amount, p.currency, r.created_at
    FROM refunds r JOIN payments p ON p.id = r.payment_id;

-- +goose Down
-- Manual payments have no place in the schema below: delete them, with
-- their refunds and idempotency keys, before migrating down.
CREATE OR REPLACE VIEW ledger_facts (payment_id, kind, fact_id, amount, currency, occurred_at) AS
    SELECT id, 'payment', NULL::uuid, amount, currency, created_at
    FROM payments
    WHERE status IN ('created', 'partially_refunded', 'refunded')
    UNION ALL
    SELECT r.payment_id, 'refund', r.id, r.amount, p.currency, r.created_at
    FROM refunds r JOIN payments p ON p.id = r.payment_id;
DROP INDEX payments_authorized_capture_before_idx;
DROP TRIGGER payments_automatic_captures_all ON payments;
DROP FUNCTION payments_automatic_captures_all();
ALTER TABLE payments
    DROP CONSTRAINT payments_cancellation_check,
    DROP CONSTRAINT payments_capture_check,
    DROP CONSTRAINT payments_refunded_captured_check,
    DROP CONSTRAINT payments_amount_captured_check,
    DROP CONSTRAINT payments_capture_method_check,
    DROP CONSTRAINT payments_status_check,
    ADD CONSTRAINT payments_status_check CHECK (status IN ('created', 'partially_refunded', 'refunded')),
    DROP COLUMN cancellation_reason,
    DROP COLUMN canceled_at,
    DROP COLUMN captured_at,
    DROP COLUMN capture_before,
    DROP COLUMN amount_captured,
    DROP COLUMN capture_method;
