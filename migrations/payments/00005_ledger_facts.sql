-- +goose Up
-- ledger_facts: every fact this service asserts the ledger must have posted,
-- one row each: a payment, one of its refunds. `ledger reconcile` reads this
-- view and nothing else of this database.
--
-- The payments service owns its schema, so it states here, in one place,
-- which of its rows are facts of which kind; the ledger never learns our
-- tables. The role reconcile connects as needs SELECT on this view alone (a
-- view reads its tables with its owner's rights): GRANT SELECT ON
-- ledger_facts TO <role>.
--
-- A new kind of fact (one the ledger's registry posts, in
-- application/ledgers/events.go) adds a UNION ALL branch, in the migration
-- that adds what the kind is stored in (a status, a table): CREATE OR REPLACE
-- VIEW with the whole query, these columns first and in this order. The grant
-- stays. Write each branch's kind as a string constant: a test reads the kinds
-- from the view's definition and checks them against the registry's.
--
--   payment_id   the payment the fact belongs to
--   kind         the ledger's kind of fact
--   fact_id      tells apart the facts of one kind on a payment (a refund's
--                id); NULL for a kind a payment has at most once
--   amount       minor units of currency
--   occurred_at  when the fact happened: reconcile expects it in the ledger
--                once its grace period has passed
CREATE VIEW ledger_facts (payment_id, kind, fact_id, amount, currency, occurred_at) AS
    SELECT id, 'payment', NULL::uuid, amount, currency, created_at
    FROM payments
    UNION ALL
    SELECT r.payment_id, 'refund', r.id, r.amount, p.currency, r.created_at
    FROM refunds r JOIN payments p ON p.id = r.payment_id;

-- +goose Down
DROP VIEW ledger_facts;
