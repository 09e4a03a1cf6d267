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

-- No posting may slip in between the checks and the rename: postings wait
-- for this transaction.
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

-- +goose Down
-- Back to the old names, to roll a deploy back. It brings back the shared
-- namespace the Up closed: payer "cus_1" of every merchant is one account
-- again, and a payer named like a merchant is that merchant's account.
-- Entries posted since keep their amounts.
LOCK TABLE ledger_entries IN SHARE ROW EXCLUSIVE MODE;
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
