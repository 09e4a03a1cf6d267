-- Run once by the postgres image on an empty data directory
-- (/docker-entrypoint-initdb.d): one server, one database per service, so that
-- neither service can read or lock the other's tables.
CREATE DATABASE payments;
CREATE DATABASE ledger;
