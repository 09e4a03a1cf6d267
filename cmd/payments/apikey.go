package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/opsreport"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/apikeystore"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/cmd/internal/cli"
	"github.com/payments-outbox/payments-outbox/cmd/internal/envconfig"
)

// runAPIKey runs the API key commands:
//
//	payments apikey create --merchant ID --name NAME [--key KEY]
//	payments apikey create --platform --name NAME
//	payments apikey list
//	payments apikey revoke --id ID
//
// create prints the key once; the database keeps its hash only. The
// arguments are read before the configuration, so -h needs none.
func runAPIKey(ctx context.Context, getenv func(string) string, args []string, out io.Writer) error {
	sub, args, err := cli.Subcommand("apikey", args, "payments apikey create | list | revoke", "Create, list or revoke API keys.",
		"create, list or revoke", out)
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		fs := cli.NewFlagSet("payments apikey create --merchant ID | --platform --name NAME [--key KEY]",
			"Create an API key and print it: this once, never again (the database keeps its hash only).\n"+
				"A merchant's key acts for that merchant only; the platform's key acts for every merchant.\n"+
				"The key is pk_test_… or pk_live_… as API_KEY_ENV says (default test).", out)
		merchant := fs.String("merchant", "", "the merchant the key acts for")
		platform := fs.Bool("platform", false, "a platform key, which acts for every merchant")
		name := fs.String("name", "", "what the key is for, shown by apikey list")
		key := fs.String("key", "", "store this key instead of making one (the compose demo's fixed key); rerunning it is a no-op")
		if err := cli.Parse(fs, args); err != nil {
			return fmt.Errorf("apikey create: %w", err)
		}
		env, err := access.ParseEnv(envconfig.New(getenv).String("API_KEY_ENV", "test"))
		if err != nil {
			return fmt.Errorf("API_KEY_ENV: %w", err)
		}
		keys, done, err := openKeys(ctx, getenv)
		if err != nil {
			return err
		}
		defer done()
		whole, sk, err := keys.Issue(ctx, access.Issue{Env: env, Platform: *platform, MerchantID: *merchant, Name: *name, Import: *key})
		if err != nil {
			return fmt.Errorf("apikey create: %w", err)
		}
		if *key != "" {
			fmt.Fprintf(out, "stored %s (%s)\n", sk.Prefix(), opsreport.KeyOwner(sk))
			return nil
		}
		fmt.Fprintf(out, "%s\n\nThe key for %s, id %s. Keep it now: it is not shown again.\n", whole, opsreport.KeyOwner(sk), sk.ID)
		return nil
	case "list":
		if err := cli.Parse(cli.NewFlagSet("payments apikey list", "List the API keys: their public prefix and id, never the key.", out), args); err != nil {
			return fmt.Errorf("apikey list: %w", err)
		}
		keys, done, err := openKeys(ctx, getenv)
		if err != nil {
			return err
		}
		defer done()
		list, err := keys.List(ctx)
		if err != nil {
			return err
		}
		return opsreport.APIKeys(out, list)
	case "revoke":
		fs := cli.NewFlagSet("payments apikey revoke --id ID",
			"Revoke an API key. Running replicas refuse it within "+access.CacheTTL.String()+", the time they trust a verified key.", out)
		id := fs.String("id", "", "the key's id, as apikey list shows it")
		if err := cli.Parse(fs, args); err != nil {
			return fmt.Errorf("apikey revoke: %w", err)
		}
		if *id == "" {
			return errors.New("apikey revoke: --id is required")
		}
		keys, done, err := openKeys(ctx, getenv)
		if err != nil {
			return err
		}
		defer done()
		if err := keys.Revoke(ctx, *id); err != nil {
			return fmt.Errorf("apikey revoke: %w", err)
		}
		fmt.Fprintf(out, "revoked %s\n", *id)
		return nil
	default:
		return fmt.Errorf("apikey: unknown subcommand %q (want create, list or revoke)", sub)
	}
}

func openKeys(ctx context.Context, getenv func(string) string) (*access.Keys, func(), error) {
	_, pool, err := openDatabase(ctx, getenv)
	if err != nil {
		return nil, nil, err
	}
	return access.NewKeys(apikeystore.New(pool), time.Now), pool.Close, nil
}
