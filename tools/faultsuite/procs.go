package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/apikeystore"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/tools/internal/proc"
)

// buildBinaries compiles the real payments and ledger commands into dir.
func buildBinaries(ctx context.Context, dir string) (payments, ledger string, err error) {
	if payments, err = proc.Build(ctx, dir, "payments"); err != nil {
		return "", "", err
	}
	if ledger, err = proc.Build(ctx, dir, "ledger"); err != nil {
		return "", "", err
	}
	return payments, ledger, nil
}

// newReplica prepares one service replica: bin with the suite's own
// environment plus env, on an address of its own that it keeps across
// restarts, its every incarnation logged to logDir/name.log.
func newReplica(name, bin, logDir string, env map[string]string) (*proc.Process, error) {
	vars := os.Environ()
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	return proc.New(name, bin, filepath.Join(logDir, name+".log"), vars)
}

// platformKey issues the platform's API key the suite's clients send, through
// the project's own key store, on the payments database (dbURL) that a
// started payments replica has migrated.
func platformKey(ctx context.Context, t testing.TB, dbURL string) string {
	t.Helper()
	pool, err := postgres.Open(ctx, dbURL, postgres.Config{})
	if err != nil {
		t.Fatalf("platform key: %v", err)
	}
	defer pool.Close()
	key, _, err := access.NewKeys(apikeystore.New(pool), time.Now).Issue(ctx, access.Issue{Env: access.EnvTest, Platform: true, Name: "faultsuite"})
	if err != nil {
		t.Fatalf("platform key: %v", err)
	}
	return key
}
