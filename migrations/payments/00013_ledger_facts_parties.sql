-- +goose Up
-- ledger_facts names each fact's parties: the merchant (merchant_id, from
-- the API key that created the payment) and the payer as that merchant knows
-- it (payer_id). The ledger's registry declares, kind by kind, which role's
-- account a fact debits and which it credits (ledger.Postings); with the
-- parties `ledger reconcile` derives the accounts each fact must have moved
-- money between, and compares them with what the ledger posted, so a fact
-- posted the wrong way, or to another payer's account, is a divergence.
--
-- The columns come last, so the view is replaced in place and keeps its
-- grant; a reader that names the columns it reads (the previous release's
-- reconcile) reads on as before. Every branch gives its payment's parties:
-- a fact is between the parties of its payment.
CREATE OR REPLACE VIEW ledger_facts (payment_id, kind, fact_id, amount, currency, occurred_at, merchant_id, payer_id) AS
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

-- +goose Down
-- A view cannot lose columns in place: it is dropped and made again as
-- before, and its grants with it. Grant reconcile's role SELECT on
-- ledger_facts again after migrating down.
DROP VIEW ledger_facts;
CREATE VIEW ledger_facts (payment_id, kind, fact_id, amount, currency, occurred_at) AS
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
