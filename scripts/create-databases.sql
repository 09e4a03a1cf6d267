-- Run once by the postgres image on an empty data directory
-- (/docker-entrypoint-initdb.d): one server, one database per service, so that
-- no service can read or lock another's tables.
CREATE DATABASE payments;
CREATE DATABASE ledger;
CREATE DATABASE webhooks;
