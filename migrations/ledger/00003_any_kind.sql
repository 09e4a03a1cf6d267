-- +goose Up
-- The kinds of fact the ledger posts are named by the consumer's registry
-- (application/ledgers/events.go), not by the schema: a new kind is a registry
-- entry and needs no migration. The kind CHECK keeps only the form the domain
-- checks too.
ALTER TABLE ledger_transactions DROP CONSTRAINT ledger_transactions_kind_check;
ALTER TABLE ledger_transactions ADD CONSTRAINT ledger_transactions_kind_check
    CHECK (kind ~ '^[a-z][a-z_]*$');

-- refund_id holds the fact id: what tells apart the facts of one kind on one
-- payment (a refund's id), part of the business key. The two kinds whose
-- shape is fixed keep their rule: a payment has none, so NULLS NOT DISTINCT
-- lets a payment post once; a refund always names its refund. Any other kind
-- has one or not, as its registry entry decides.
ALTER TABLE ledger_transactions DROP CONSTRAINT ledger_transactions_refund_id_check;
ALTER TABLE ledger_transactions ADD CONSTRAINT ledger_transactions_refund_id_check
    CHECK (CASE kind WHEN 'payment' THEN refund_id IS NULL WHEN 'refund' THEN refund_id IS NOT NULL ELSE true END);
COMMENT ON COLUMN ledger_transactions.refund_id IS
    'the fact id: tells apart the facts of one kind on one payment (a refund''s id); NULL for a kind a payment has at most once';

-- +goose Down
COMMENT ON COLUMN ledger_transactions.refund_id IS NULL;
ALTER TABLE ledger_transactions DROP CONSTRAINT ledger_transactions_refund_id_check;
ALTER TABLE ledger_transactions ADD CONSTRAINT ledger_transactions_refund_id_check
    CHECK ((kind = 'refund') = (refund_id IS NOT NULL));
ALTER TABLE ledger_transactions DROP CONSTRAINT ledger_transactions_kind_check;
ALTER TABLE ledger_transactions ADD CONSTRAINT ledger_transactions_kind_check
    CHECK (kind IN ('payment', 'refund'));
