// Package payments embeds the payments database's goose migrations, so the
// binary and the tests apply exactly the same SQL.
package payments

import "embed"

// FS holds the numbered goose SQL files of the payments database.
//
//go:embed *.sql
var FS embed.FS
