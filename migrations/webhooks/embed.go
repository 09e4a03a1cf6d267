// Package webhooks embeds the webhooks database's goose migrations, so the
// binary and the tests apply exactly the same SQL.
package webhooks

import "embed"

// FS holds the numbered goose SQL files of the webhooks database.
//
//go:embed *.sql
var FS embed.FS
