package postgres

// OutboxChannel is the LISTEN/NOTIFY channel that says outbox rows are
// waiting. The payments service's writes notify it after they commit
// (paymentstore.Notifier) and the relays listen on it (outboxstore.Listen).
// It is declared here, in the package both import, so that the write side
// and the relay's store need not import each other to agree on it.
const OutboxChannel = "outbox_pending"
