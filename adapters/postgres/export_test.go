package postgres

// RollbackTimeout exposes the rollback's bound to the external tests.
const RollbackTimeout = rollbackTimeout
