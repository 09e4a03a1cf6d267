-- +goose Up
-- The ledger's schema: the inbox of the messages it accepted, the
-- double-entry ledger (transactions and their entries), the balances the
-- postings keep, and what it knows of each payment (its hold and its
-- limits). The triggers and CHECKs hold the ledger's rules whatever code
-- writes these tables: every transaction balances, history is append-only,
-- a balance is the sum of its entries, a refund never passes its capture.

-- ---------------------------------------------------------------------------
-- inbox_messages: every message the ledger accepted, keyed by the message id
-- (the CloudEvent id). The primary key IS the first layer of idempotency: the
-- consumer inserts with ON CONFLICT DO NOTHING in the same transaction as the
-- ledger rows, so a redelivered message inserts nothing and is acknowledged.
-- The whole message is kept (not just its id) as an audit record of what
-- arrived, and so that events of a type this version does not handle can be
-- applied later by a version that does.
--
-- A message is applied as it is recorded (LEDGER_INBOX_MODE=sync), or
-- recorded now and applied later by the inbox processor (async). A failed
-- attempt is recorded on the row and retried with backoff; after the last
-- attempt the row is parked: kept, counted, out of the claims until an
-- operator retries it (`ledger inbox retry`).
CREATE TABLE inbox_messages (
    id              uuid        PRIMARY KEY,
    type            text        NOT NULL,
    payload         jsonb       NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now(),
    -- NULL = recorded but not applied (pending, or of a type this version does not handle).
    processed_at    timestamptz,
    error           text,
    attempts        integer     NOT NULL DEFAULT 0,
    -- NULL: due now. Set after a failed attempt to the time of the next one.
    next_attempt_at timestamptz,
    -- Set when the row ran out of attempts, or can never apply.
    parked_at       timestamptz,
    -- The trace id of the message (32 lower-case hex digits, from its
    -- traceparent), so an operator holding a row can open the trace that
    -- wrote the payment, published the event and applied it. NULL when the
    -- message carried no trace context.
    trace_id        text
);
-- The processor claims the oldest due rows that are neither applied nor
-- parked; the index holds only those, so it stays as small as the backlog.
CREATE INDEX inbox_messages_pending_idx ON inbox_messages (received_at)
    WHERE processed_at IS NULL AND parked_at IS NULL;
-- Parked rows are few and looked up by `ledger inbox stats` and the gauges.
CREATE INDEX inbox_messages_parked_idx ON inbox_messages (parked_at)
    WHERE parked_at IS NOT NULL;
-- Retention cleanup deletes by age in bounded batches.
CREATE INDEX inbox_messages_received_at_idx ON inbox_messages (received_at);

-- ---------------------------------------------------------------------------
-- ledger_transactions: one row per posted business fact. Two UNIQUE
-- constraints make posting idempotent even without the inbox (the second
-- layer of idempotency): the message id, and the business key (payment,
-- kind, fact id).
--
-- The kinds of fact are named by the consumer's registry
-- (application/ledgers/events.go), not by the schema: a new kind is a
-- registry entry and needs no migration. The kind CHECK keeps only the form
-- the domain checks too.
CREATE TABLE ledger_transactions (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id  uuid        NOT NULL,
    payment_id  uuid        NOT NULL,
    kind        text        NOT NULL CHECK (kind ~ '^[a-z][a-z_]*$'),
    fact_id     uuid,
    amount      bigint      NOT NULL CHECK (amount > 0),
    currency    text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    occurred_at timestamptz NOT NULL,
    posted_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ledger_transactions_message_id_key UNIQUE (message_id),
    -- A kind a payment has at most once has no fact id, and NULLS NOT
    -- DISTINCT (Postgres 15) makes two such rows for one payment collide.
    CONSTRAINT ledger_transactions_business_key UNIQUE NULLS NOT DISTINCT (payment_id, kind, fact_id),
    -- The two kinds whose shape is fixed: a payment has no fact id, a refund
    -- always names its refund. Any other kind has one or not, as its
    -- registry entry decides.
    CONSTRAINT ledger_transactions_fact_id_check
        CHECK (CASE kind WHEN 'payment' THEN fact_id IS NULL WHEN 'refund' THEN fact_id IS NOT NULL ELSE true END)
);
COMMENT ON COLUMN ledger_transactions.fact_id IS
    'the fact id: tells apart the facts of one kind on one payment (a refund''s id); NULL for a kind a payment has at most once';
-- The balance as of a past time subtracts the transactions posted after it.
-- ledger_transactions is append-only and posted_at grows with its rows: a
-- BRIN index finds the recent ones for the cost of a few pages per posting,
-- where a B-tree would add an index insert to every one.
CREATE INDEX ledger_transactions_posted_at_brin ON ledger_transactions USING brin (posted_at);

-- ledger_entries: the legs of each transaction, signed amounts, debits
-- negative. An account is a role and its owners, with one canonical name
-- (domain/ledger/account.go, docs/LEDGER.md): "merchant:<merchant>",
-- "payer:<merchant>:<payer>", each part percent-encoded so that ":" and "%"
-- never appear raw inside one. The CHECK keeps that form whatever code
-- writes the names (the domain checks the rest: which roles exist, how many
-- owners each has, that the encoding is canonical), so a raw payer id can
-- never be an account, nor payers and merchants share one namespace.
CREATE TABLE ledger_entries (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    transaction_id bigint NOT NULL REFERENCES ledger_transactions (id),
    account_id     text   NOT NULL CHECK (account_id ~ '^[a-z][a-z_]*(:[-A-Za-z0-9._~%]+)+$'),
    amount         bigint NOT NULL CHECK (amount <> 0),
    currency       text   NOT NULL CHECK (currency ~ '^[A-Z]{3}$')
);
CREATE INDEX ledger_entries_transaction_id_idx ON ledger_entries (transaction_id);
-- GET /accounts/{id}/entries pages an account's entries newest first by
-- keyset (application/ledgers/entries.go): WHERE account_id = $1 AND
-- id < (cursor) ORDER BY id DESC LIMIT n. This index is that order, so a
-- page is one index range however long the account's history. Balances do
-- not sum entries (ledger_balances keeps them), so this is the narrowest
-- index that serves the listing: one insert per entry, no INCLUDE columns
-- (the page's rows are read by id).
CREATE INDEX ledger_entries_account_id_idx ON ledger_entries (account_id, id DESC);

-- ledger_balances: one row per account and currency, kept by the postings
-- in each posting's transaction, so that a read costs one row however long
-- the account's history, and a posting that would take a balance past
-- bigint is refused when it is posted (and its message parked) instead of
-- breaking every later read of the account: an append-only ledger could
-- never repair a sum that no longer fits.
--   posted   the sum of the account's entries: what captured and automatic
--            payments and refunds moved; a merchant's available balance
--   pending  the sum of the merchant's open holds in the currency
--            (ledger_payments); never counts in posted
-- A hot account split into shards would be a shard column in the key, the
-- read summing the shards.
CREATE TABLE ledger_balances (
    account_id text   NOT NULL,
    currency   text   NOT NULL,
    posted     bigint NOT NULL,
    pending    bigint NOT NULL DEFAULT 0 CHECK (pending >= 0),
    PRIMARY KEY (account_id, currency)
);

-- ledger_payments: what the ledger knows of each payment it has seen: its
-- hold, and what was posted (captured) and refunded for it (docs/LEDGER.md,
-- "Holds"). An authorized payment moves no money yet: the ledger places a
-- hold of its amount for the merchant, which shows as the merchant's pending
-- balance; a capture posts the captured amount payer → merchant and releases
-- the whole hold; a cancellation releases it.
--
-- The limits are the database's, whatever code writes the row: a hold never
-- below zero nor above what was authorized, a capture never above the
-- authorization, and refunds never above what was captured — so a refund
-- for more than the payment's posted amount can never commit. One row per
-- payment, read and written by primary key: no rule here sums history.
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
-- The balance as of a past time subtracts the holds placed or released
-- after it.
CREATE INDEX ledger_payments_placed_idx ON ledger_payments (merchant_account, currency, placed_at) WHERE placed_at IS NOT NULL;
CREATE INDEX ledger_payments_released_idx ON ledger_payments (merchant_account, currency, released_at) WHERE released_at IS NOT NULL;

-- ---------------------------------------------------------------------------
-- The database-level guards of the ledger, whatever code writes to it:
--
-- 1. At commit, each new transaction must have at least two entries and sum
--    to zero in every currency, and its entries are added to their balances
--    (ledger_transactions_balanced).
-- 2. Entries are written together with their transaction, never added later:
--    an entry whose transaction was committed by an earlier database
--    transaction is refused (check 1 has already passed for it)
--    (ledger_entries_with_their_transaction).
-- 3. The ledger is append-only: a correction is a new transaction, never an
--    UPDATE or DELETE of history; a payment's row is never deleted; a
--    balance is written by the postings alone.
-- 4. A hold moves the merchant's pending balance at commit
--    (ledger_payments_pending).
--
-- Checks 2 and 3 cost nothing per entry on the normal path (one statement-level
-- check, and triggers that never fire), which keeps the consumer fast.

-- A balance past bigint raises SQLSTATE 22003 (numeric_value_out_of_range),
-- naming the account, and the commit fails; the store reports it as
-- ledger.ErrBalanceLimit.
-- +goose StatementBegin
CREATE FUNCTION ledger_balance_limit(account text, currency text) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the % balance of % would pass what int64 holds', currency, account
        USING ERRCODE = 'numeric_value_out_of_range';
END;
$$;
-- +goose StatementEnd

-- 1. One deferred trigger per new ledger transaction checks that it balances
-- and adds its entries to their balances: a balance and its entries commit
-- together or not at all, and a transaction and its entries can be written
-- by separate statements within one commit. Adding them at commit, not when
-- the entries are inserted, holds a balance row's lock for the commit alone:
-- the inbox processor posts a batch of rows in one transaction, and a row
-- locked from the batch's first posting to its commit would make every batch
-- on the same merchants wait for the others. Each transaction's rows are
-- updated sorted by account and currency (byte order, whatever the locale),
-- so its merchant's before its payer's ("merchant:" < "payer:"); the
-- triggers fire in the order of the postings, and the processor posts a
-- batch in that order too (Handler.Compare in application/ledgers/
-- handler.go), so two commits sharing rows lock them in the same order and
-- never deadlock.
-- +goose StatementBegin
CREATE FUNCTION ledger_check_and_add_balances() RETURNS trigger
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
    INSERT INTO ledger_balances AS b (account_id, currency, posted)
    SELECT account_id, currency, sum(amount) FROM ledger_entries WHERE transaction_id = NEW.id
    GROUP BY account_id, currency
    ORDER BY account_id COLLATE "C", currency COLLATE "C"
    ON CONFLICT (account_id, currency) DO UPDATE SET posted = CASE
        WHEN b.posted::numeric + EXCLUDED.posted BETWEEN -9223372036854775808 AND 9223372036854775807
        THEN b.posted + EXCLUDED.posted
        ELSE ledger_balance_limit(b.account_id, b.currency) END;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE CONSTRAINT TRIGGER ledger_transactions_balanced
    AFTER INSERT ON ledger_transactions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ledger_check_and_add_balances();

-- 2. The processor applies each row of a batch in a savepoint, so that a row
-- that fails rolls back alone. Rows written in a savepoint carry the
-- subtransaction's id, not the top-level one, so the check compares against
-- any transaction id of the current transaction: a ledger transaction row
-- the statement can see was written either by this transaction (still in
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
CREATE FUNCTION ledger_entries_with_their_transaction() RETURNS trigger
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

CREATE TRIGGER ledger_entries_with_their_transaction
    AFTER INSERT ON ledger_entries
    REFERENCING NEW TABLE AS new_entries
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_with_their_transaction();

-- 3. Append-only.
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

-- A payment's row outlives every change of it: deleting one would forget
-- what was refunded, and let a refund past the captured amount through.
CREATE TRIGGER ledger_payments_kept
    BEFORE DELETE OR TRUNCATE ON ledger_payments
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();

-- Balances are written by ledger_check_and_add_balances and ledger_add_pending
-- only: any other write (a direct INSERT or UPDATE, a DELETE, a TRUNCATE) is
-- refused, so a balance is always the sum of its entries. pg_trigger_depth()
-- is 1 in this guard when a statement writes the table itself, 2 when one of
-- those triggers does.
-- +goose StatementBegin
CREATE FUNCTION ledger_balances_written_by_postings() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') AND pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'ledger_balances is kept by the postings: post a transaction instead'
        USING ERRCODE = 'check_violation';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER ledger_balances_written_by_postings
    BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON ledger_balances
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_balances_written_by_postings();

-- 4. A hold moves pending at commit, as a posting moves posted: a deferred
-- trigger per change of a payment's hold adds the change to the merchant's
-- balance row. Deferred for the same reason: the row is locked for the
-- commit alone, not from the batch's first hold to its commit. The deferred
-- triggers of a commit fire in the order their rows were written, and the
-- processor applies a batch by (merchant, currency, payer), a hold touching
-- only the merchant's row of its currency: two commits still take the rows
-- they share in the same order. A pending sum past bigint fails the commit
-- with SQLSTATE 22003, as a balance does (ledger.ErrBalanceLimit).
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

-- +goose Down
-- Everything the Up made, and the rows in it: for an empty database only.
DROP TABLE ledger_payments;
DROP TABLE ledger_balances;
DROP TABLE ledger_entries;
DROP TABLE ledger_transactions;
DROP TABLE inbox_messages;
DROP FUNCTION ledger_add_pending();
DROP FUNCTION ledger_balances_written_by_postings();
DROP FUNCTION ledger_append_only();
DROP FUNCTION ledger_entries_with_their_transaction();
DROP FUNCTION ledger_xid_is_current(xid);
DROP FUNCTION ledger_check_and_add_balances();
DROP FUNCTION ledger_balance_limit(text, text);
