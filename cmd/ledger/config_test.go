package main

import (
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
)

// TestAPITokensAreWhatTheBearerParserAccepts: LEDGER_API_TOKENS accepts a
// token exactly when the read API's Bearer parser would hand it over, so a
// token that could never authenticate stops start-up instead, with one line
// that names the variable and not the token.
func TestAPITokensAreWhatTheBearerParserAccepts(t *testing.T) {
	pad := strings.Repeat("x", 32)
	for _, tok := range []string{
		pad, "Az09-._~+/" + pad + "==", operatorToken, "demo-operator-token-of-docker-compose-not-a-secret",
		pad + "!", pad + ":", pad + `"`, pad + "=x", pad + "\\", pad + "é", pad + "%20", "=" + pad,
	} {
		vars := map[string]string{"DATABASE_URL": "postgres://x", "LEDGER_API_TOKENS": operatorToken + "," + tok}
		_, err := loadConfig(getenvFrom(vars), false)
		parsed, perr := httpserver.ParseBearer("Bearer " + tok)
		switch {
		case perr == nil && parsed == tok && err != nil:
			t.Errorf("token %q: the Bearer parser accepts it, the configuration refuses it: %v", tok, err)
		case perr != nil && err == nil:
			t.Errorf("token %q: the configuration accepts a token the Bearer parser refuses (%v)", tok, perr)
		case err != nil && (!strings.Contains(err.Error(), "LEDGER_API_TOKENS") || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), tok)):
			t.Errorf("token %q: got %q, want one line naming LEDGER_API_TOKENS and not the token", tok, err)
		}
	}
}
