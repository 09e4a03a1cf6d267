// Package ledger embeds the ledger database's goose migrations, so the binary
// and the tests apply exactly the same SQL.
package ledger

import "embed"

// FS holds the numbered goose SQL files of the ledger database.
//
//go:embed *.sql
var FS embed.FS
