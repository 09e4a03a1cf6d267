-- +goose Up
-- ledger_facts names the statuses in which a payment is a fact of kind
-- 'payment': money the payer paid the merchant. 00005 counted every payment
-- row, so a status added later — an authorization the payer has not yet been
-- charged for — would have been reconciled as money moved, silently. Now a
-- new status is no fact until its migration decides what it is; the
-- decision, status by status and kind by kind, is the table of
-- ledgerstore's TestEveryStatusHasAReconcileRule, which reads this view.
--
-- Same columns, same order, same grant (00005 says how to extend the view).
CREATE OR REPLACE VIEW ledger_facts (payment_id, kind, fact_id, amount, currency, occurred_at) AS
    SELECT id, 'payment', NULL::uuid, amount, currency, created_at
    FROM payments
    WHERE status IN ('created', 'partially_refunded', 'refunded')
    UNION ALL
    SELECT r.payment_id, 'refund', r.id, r.amount, p.currency, r.created_at
    FROM refunds r JOIN payments p ON p.id = r.payment_id;

-- +goose Down
CREATE OR REPLACE VIEW ledger_facts (payment_id, kind, fact_id, amount, currency, occurred_at) AS
    SELECT id, 'payment', NULL::uuid, amount, currency, created_at
    FROM payments
    UNION ALL
    SELECT r.payment_id, 'refund', r.id, r.amount, p.currency, r.created_at
    FROM refunds r JOIN payments p ON p.id = r.payment_id;
