-- +goose Up
-- The inbox's second mode: a message may be recorded now and applied later by
-- the inbox processor (LEDGER_INBOX_MODE=async), and a message of a type a
-- later version learns is applied by that version's processor. A failed
-- attempt is recorded on the row and retried with backoff; after the last
-- attempt the row is parked: kept, counted, out of the claims until an
-- operator retries it (`ledger inbox retry`).
ALTER TABLE inbox_messages
    ADD COLUMN attempts        integer     NOT NULL DEFAULT 0,
    -- NULL: due now. Set after a failed attempt to the time of the next one.
    ADD COLUMN next_attempt_at timestamptz,
    -- Set when the row ran out of attempts, or can never apply.
    ADD COLUMN parked_at       timestamptz;

-- The processor claims the oldest due rows that are neither applied nor
-- parked; the index holds only those, so it stays as small as the backlog.
DROP INDEX inbox_messages_pending_idx;
CREATE INDEX inbox_messages_pending_idx ON inbox_messages (received_at)
    WHERE processed_at IS NULL AND parked_at IS NULL;
-- Parked rows are few and looked up by `ledger inbox stats` and the gauges.
CREATE INDEX inbox_messages_parked_idx ON inbox_messages (parked_at)
    WHERE parked_at IS NOT NULL;

-- The processor applies each row of a batch in a savepoint, so that a row
-- that fails rolls back alone. Rows written in a savepoint carry the
-- subtransaction's id, not the top-level one, so the check that entries are
-- written together with their transaction (00002) compares against any
-- transaction id of the current transaction: a ledger transaction row the
-- statement can see was written either by this transaction (still in
-- progress, savepoints included) or by one that committed earlier.
-- +goose StatementBegin
CREATE FUNCTION ledger_xid_is_current(x xid) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
DECLARE
    cur  bigint := pg_current_xact_id()::text::bigint;
    lo   bigint := cur & 4294967295;
    whole bigint := (cur - lo) + x::text::bigint;
BEGIN
    IF x = cur::text::xid8::xid THEN
        RETURN true; -- the common case, no savepoint
    END IF;
    -- x is a 32-bit id: put it in the epoch nearest the current id.
    IF whole - cur > 2147483648 THEN
        whole := whole - 4294967296;
    ELSIF cur - whole > 2147483648 THEN
        whole := whole + 4294967296;
    END IF;
    IF whole < 3 THEN
        RETURN false; -- a frozen or special id: long committed
    END IF;
    RETURN coalesce(pg_xact_status(whole::text::xid8) = 'in progress', false);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ledger_entries_with_their_transaction() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- The plain comparison first: it settles the consumer's path (no
    -- savepoint) without a function call per entry; Postgres evaluates the
    -- cheaper condition first.
    IF EXISTS (SELECT 1 FROM new_entries e JOIN ledger_transactions t ON t.id = e.transaction_id
               WHERE t.xmin <> pg_current_xact_id()::xid AND NOT ledger_xid_is_current(t.xmin)) THEN
        RAISE EXCEPTION 'ledger entries can only be written together with their transaction'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ledger_entries_with_their_transaction() RETURNS trigger
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
DROP FUNCTION ledger_xid_is_current(xid);
DROP INDEX inbox_messages_parked_idx;
DROP INDEX inbox_messages_pending_idx;
CREATE INDEX inbox_messages_pending_idx ON inbox_messages (received_at) WHERE processed_at IS NULL;
ALTER TABLE inbox_messages DROP COLUMN parked_at, DROP COLUMN next_attempt_at, DROP COLUMN attempts;
