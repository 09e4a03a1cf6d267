-- +goose Up
-- The chart of accounts (docs/LEDGER.md). Until now an account was a payer or
-- merchant id exactly as the event carried it, so payers and merchants shared
-- one namespace: a merchant that named its payer "mer_B" moved merchant
-- mer_B's balance, and payer "cus_1" was one account whichever merchant named
-- it. An account is now a role and its owners, with one canonical name
-- (domain/ledger/account.go): "merchant:<merchant>" and
-- "payer:<merchant>:<payer>", each part percent-encoded so that ":" and "%"
-- never appear raw inside one.
--
-- Every existing entry is renamed. A transaction's merchant is its merchant
-- leg's old id: a payment's positive leg, a refund's negative leg (the only
-- kinds posted so far); the other leg is the payer, as that merchant knows it.
-- The attack's rows — merchant mer_A paying itself from a payer it called
-- "mer_B" — become payer:mer_A:mer_B → merchant:mer_A, and mer_B's account
-- keeps only what mer_B's own payments moved.
--
-- Then balances become a table the database keeps in each posting's
-- transaction, so that a read costs one row however long the account's
-- history, and a posting that would take a balance past bigint is refused
-- when it is posted (and its message parked) instead of breaking every later
-- read of the account: an append-only ledger could never repair a sum that no
-- longer fits. Both changes are one migration, so that an upgrade is all or
-- nothing: a ledger whose history cannot be given balances keeps its old
-- names, for the version that reads them.

-- No posting may slip in between the checks, the rename, the balances' fill
-- and the trigger that keeps them: postings wait for this transaction.
LOCK TABLE ledger_entries IN SHARE ROW EXCLUSIVE MODE;

-- +goose StatementBegin
DO $$
DECLARE
    bad record;
BEGIN
    SELECT id, kind INTO bad FROM ledger_transactions WHERE kind NOT IN ('payment', 'refund') LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger transaction % is a %: this migration knows which leg is the merchant''s only for payments and refunds', bad.id, bad.kind;
    END IF;
    SELECT transaction_id INTO bad FROM ledger_entries GROUP BY transaction_id
    HAVING count(*) <> 2 OR count(*) FILTER (WHERE amount > 0) <> 1 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger transaction % is not one debit and one credit: this migration cannot tell its merchant from its payer', bad.transaction_id;
    END IF;
END;
$$;
-- +goose StatementEnd

-- ledger_account_part percent-encodes one owner id as the domain does: every
-- byte of its UTF-8 outside [A-Za-z0-9._~-] becomes %XX, upper-case hex.
-- (translate, not a regular expression, decides what is safe: its answer does
-- not depend on the database's locale.)
-- +goose StatementBegin
CREATE FUNCTION ledger_account_part(p text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT CASE
        WHEN translate(p, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-', '') = '' THEN p
        ELSE (SELECT string_agg(CASE WHEN b BETWEEN 48 AND 57 OR b BETWEEN 65 AND 90 OR b BETWEEN 97 AND 122 OR b IN (45, 46, 95, 126)
                                     THEN chr(b) ELSE '%' || upper(lpad(to_hex(b), 2, '0')) END, '' ORDER BY i)
              FROM (SELECT i, get_byte(convert_to(p, 'UTF8'), i) AS b
                    FROM generate_series(0, octet_length(convert_to(p, 'UTF8')) - 1) AS i) AS bytes)
    END
$$;
-- +goose StatementEnd

-- The ledger is append-only (00002); this rename is the one rewrite of
-- history, and only of names: the trigger is off for this transaction's
-- UPDATE alone, and back on before it commits.
ALTER TABLE ledger_entries DISABLE TRIGGER ledger_entries_append_only;

-- m is each transaction's merchant leg; the UPDATE reads every old name from
-- the statement's snapshot, whichever row it renames first.
UPDATE ledger_entries e
SET account_id = CASE
        WHEN e.id = m.id THEN 'merchant:' || ledger_account_part(m.account_id)
        ELSE 'payer:' || ledger_account_part(m.account_id) || ':' || ledger_account_part(e.account_id)
    END
FROM ledger_transactions t, ledger_entries m
WHERE t.id = e.transaction_id
  AND m.transaction_id = e.transaction_id
  AND (m.amount > 0) = (t.kind = 'payment');

ALTER TABLE ledger_entries ENABLE TRIGGER ledger_entries_append_only;
DROP FUNCTION ledger_account_part(text);

-- The database keeps the names in the chart's form, whatever code writes
-- them: a role, then one or more percent-encoded owners. A raw payer id can
-- never be an account name again. (The domain checks the rest: which roles
-- exist, how many owners each has, that the encoding is canonical.)
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_account_id_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_account_id_check
    CHECK (account_id ~ '^[a-z][a-z_]*(:[-A-Za-z0-9._~%]+)+$');

-- One row per account and currency: the sum of its entries ("posted"). A
-- later kind of amount (held funds, say) is a column beside it; a hot
-- account split into shards is a shard column in the key, the read summing
-- the shards.
CREATE TABLE ledger_balances (
    account_id text   NOT NULL,
    currency   text   NOT NULL,
    posted     bigint NOT NULL,
    PRIMARY KEY (account_id, currency)
);

-- An existing history whose sum is past bigint cannot be kept as a balance:
-- stop here and name it, rather than fail every read of it later.
-- +goose StatementBegin
DO $$
DECLARE
    over record;
BEGIN
    SELECT account_id, currency, sum(amount) AS total INTO over
    FROM ledger_entries GROUP BY account_id, currency
    HAVING sum(amount) NOT BETWEEN -9223372036854775808 AND 9223372036854775807
    ORDER BY account_id, currency LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'the entries of account % in % sum to %, past what a bigint balance holds', over.account_id, over.currency, over.total
            USING ERRCODE = 'numeric_value_out_of_range',
                  HINT = 'post a correcting transaction with the previous version of the ledger, then migrate again';
    END IF;
END;
$$;
-- +goose StatementEnd

INSERT INTO ledger_balances (account_id, currency, posted)
SELECT account_id, currency, sum(amount)::bigint FROM ledger_entries GROUP BY account_id, currency;

-- At commit, one deferred trigger per new ledger transaction checks that it
-- balances (as ledger_check_balanced did since 00002) and adds its entries to
-- their balances: a balance and its entries commit together or not at all.
-- Adding them at commit, not when the entries are inserted, holds a balance
-- row's lock for the commit alone: the inbox processor posts a batch of rows
-- in one transaction, and a row locked from the batch's first posting to its
-- commit made every batch on the same merchants wait for the others. Each
-- transaction's rows are updated sorted by account and currency (byte order,
-- whatever the locale), so its merchant's before its payer's ("merchant:" <
-- "payer:"); the triggers fire in the order of the postings, and the
-- processor posts a batch in that order too (Handler.Compare in
-- application/ledgers/handler.go), so two commits sharing rows lock them
-- in the same order and never deadlock. A balance past bigint raises
-- SQLSTATE 22003 (numeric_value_out_of_range), naming the account, and the
-- commit fails; the store reports it as ledger.ErrBalanceLimit.
-- +goose StatementBegin
CREATE FUNCTION ledger_balance_limit(account text, currency text) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the % balance of % would pass what int64 holds', currency, account
        USING ERRCODE = 'numeric_value_out_of_range';
END;
$$;
-- +goose StatementEnd

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

DROP TRIGGER ledger_transactions_balanced ON ledger_transactions;
DROP FUNCTION ledger_check_balanced();
CREATE CONSTRAINT TRIGGER ledger_transactions_balanced
    AFTER INSERT ON ledger_transactions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ledger_check_and_add_balances();

-- Balances are written by that trigger only: any other write (a direct
-- INSERT or UPDATE, a DELETE, a TRUNCATE) is refused, so a balance is always
-- the sum of its entries. pg_trigger_depth() is 1 in this guard when a
-- statement writes the table itself, 2 when ledger_check_and_add_balances
-- does.
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

-- Balances no longer sum entries, so nothing reads entries by account: the
-- index cost every posting two index inserts.
DROP INDEX ledger_entries_account_idx;

-- +goose Down
-- Back to the old names and the summed balances, to roll a deploy back. It
-- brings back the shared namespace the Up closed: payer "cus_1" of every
-- merchant is one account again, and a payer named like a merchant is that
-- merchant's account. Entries posted since keep their amounts.
LOCK TABLE ledger_entries IN SHARE ROW EXCLUSIVE MODE;
CREATE INDEX ledger_entries_account_idx ON ledger_entries (account_id, currency) INCLUDE (amount);
DROP TRIGGER ledger_balances_written_by_postings ON ledger_balances;
-- +goose StatementBegin
CREATE FUNCTION ledger_check_balanced() RETURNS trigger
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
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
DROP TRIGGER ledger_transactions_balanced ON ledger_transactions;
CREATE CONSTRAINT TRIGGER ledger_transactions_balanced
    AFTER INSERT ON ledger_transactions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ledger_check_balanced();
DROP FUNCTION ledger_balances_written_by_postings();
DROP FUNCTION ledger_check_and_add_balances();
DROP FUNCTION ledger_balance_limit(text, text);
DROP TABLE ledger_balances;
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_account_id_check;

-- The old name is the last owner, decoded: the merchant of a merchant
-- account, the payer id of a payer account.
-- +goose StatementBegin
CREATE FUNCTION ledger_account_old_name(name text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT convert_from(string_agg(CASE WHEN tok[1] LIKE '\%%' THEN decode(substr(tok[1], 2, 2), 'hex')
                                        ELSE convert_to(tok[1], 'UTF8') END, ''::bytea ORDER BY n), 'UTF8')
    FROM regexp_matches(substring(name FROM '[^:]*$'), '%[0-9A-F]{2}|[^%]+', 'g') WITH ORDINALITY AS m(tok, n)
$$;
-- +goose StatementEnd

ALTER TABLE ledger_entries DISABLE TRIGGER ledger_entries_append_only;
UPDATE ledger_entries SET account_id = ledger_account_old_name(account_id);
ALTER TABLE ledger_entries ENABLE TRIGGER ledger_entries_append_only;
DROP FUNCTION ledger_account_old_name(text);
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_account_id_check CHECK (account_id <> '');
