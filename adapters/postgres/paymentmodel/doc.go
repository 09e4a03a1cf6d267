// Package paymentmodel holds the model-based test of a payment's whole
// life against the real stores: random, seeded sequences of every operation
// of the payment's state machine (domain/payment's table), sent through the
// use cases to Postgres (paymentstore), then through the relay's real claim
// (outboxstore) to the ledger's inbox and store (ledgerstore). After each
// step it holds the answers, the rows and the outbox to a model of what
// the table and the money rules predict, and after each drain the ledger's
// balances to what the payments database implies; at the end reconcile
// must find nothing, and every rule the model states must be one the
// database refuses to break.
//
// It is a package of its own, under adapters/postgres, because it needs
// the payments and the ledger stores and the relay together — what no one
// store's package may import — and it runs in the services' module, where
// `go test ./...` runs it on every change to the code it exercises.
// It has no code but its tests.
package paymentmodel
