-- +goose Up
-- refund_id becomes fact_id: since 00003 the column holds the fact id of any
-- kind that has one (what tells apart the facts of one kind on one payment),
-- not only a refund's. The rename carries the business key
-- (ledger_transactions_business_key, now on payment_id, kind, fact_id), the
-- rule of the two fixed kinds (a payment has no fact id, a refund always
-- has one) and the column's comment with it.
--
-- Expand, then contract. During a rolling deploy the previous release's
-- ledger keeps running beside this one, and it names refund_id when it
-- posts, reads entries and reconciles. So for one release refund_id stays,
-- as a copy the database keeps equal to fact_id on every row: a posting
-- written under either name has both, and the business key, on fact_id,
-- refuses the same fact posted by the two releases under two message ids.
-- The release after this one drops refund_id, its trigger and its check;
-- docs/RUNBOOK.md ("Deploying and restarting the ledger") says when.
--
-- The rename and the copy take the table's lock for the whole migration:
-- postings and reads of both releases wait for it, for as long as the copy
-- of the existing fact ids takes.
ALTER TABLE ledger_transactions RENAME COLUMN refund_id TO fact_id;
ALTER TABLE ledger_transactions RENAME CONSTRAINT ledger_transactions_refund_id_check TO ledger_transactions_fact_id_check;

ALTER TABLE ledger_transactions ADD COLUMN refund_id uuid;
COMMENT ON COLUMN ledger_transactions.refund_id IS
    'fact_id under the previous release''s name, kept equal to it for that release; dropped by the next migration that contracts it';

-- The ledger is append-only (00002); filling the copy is no change of
-- history: the trigger is off for this transaction's UPDATE alone.
ALTER TABLE ledger_transactions DISABLE TRIGGER ledger_transactions_append_only;
UPDATE ledger_transactions SET refund_id = fact_id WHERE fact_id IS NOT NULL;
ALTER TABLE ledger_transactions ENABLE TRIGGER ledger_transactions_append_only;

-- Every posting from now on fills both: the previous release names
-- refund_id, this one fact_id. A BEFORE trigger runs before the unique
-- checks of INSERT … ON CONFLICT, so a posting by the previous release meets
-- the business key on fact_id like any other. Rows are never updated, so
-- INSERT is all there is to keep in step.
-- +goose StatementBegin
CREATE FUNCTION ledger_transactions_fact_id_in_step() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.fact_id IS NULL THEN
        NEW.fact_id := NEW.refund_id;
    ELSIF NEW.refund_id IS NOT NULL AND NEW.refund_id <> NEW.fact_id THEN
        RAISE EXCEPTION 'ledger transaction names fact_id % and refund_id %: they are one column under two names', NEW.fact_id, NEW.refund_id
            USING ERRCODE = 'check_violation';
    END IF;
    NEW.refund_id := NEW.fact_id;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER ledger_transactions_fact_id_in_step
    BEFORE INSERT ON ledger_transactions
    FOR EACH ROW EXECUTE FUNCTION ledger_transactions_fact_id_in_step();

ALTER TABLE ledger_transactions ADD CONSTRAINT ledger_transactions_refund_id_in_step
    CHECK (refund_id IS NOT DISTINCT FROM fact_id);

-- +goose Down
ALTER TABLE ledger_transactions DROP CONSTRAINT ledger_transactions_refund_id_in_step;
DROP TRIGGER ledger_transactions_fact_id_in_step ON ledger_transactions;
DROP FUNCTION ledger_transactions_fact_id_in_step();
ALTER TABLE ledger_transactions DROP COLUMN refund_id;
ALTER TABLE ledger_transactions RENAME CONSTRAINT ledger_transactions_fact_id_check TO ledger_transactions_refund_id_check;
ALTER TABLE ledger_transactions RENAME COLUMN fact_id TO refund_id;
