package main

import (
	"fmt"
	"io"

	"github.com/payments-outbox/payments-outbox/application/provenance"
	"github.com/payments-outbox/payments-outbox/cmd/internal/cli"
)

// runSigningKey runs `payments signing-key create [--id ID]`: a new Ed25519
// key pair for signing the events, printed once as the variables that hold
// it, with what goes where as comments (the output is a valid env file). It
// needs no configuration and touches nothing: the key lives only where the
// operator puts it. docs/SECURITY.md has the rotation, step by step.
func runSigningKey(args []string, out io.Writer) error {
	sub, args, err := cli.Subcommand("signing-key", args, "payments signing-key create [--id ID]",
		"Make a key pair for signing the events the relay publishes.", "create", out)
	if err != nil {
		return err
	}
	if sub != "create" {
		return fmt.Errorf("signing-key: unknown subcommand %q (want create)", sub)
	}
	fs := cli.NewFlagSet("payments signing-key create [--id ID]",
		"Make a new Ed25519 key pair and print it, once: the private key for the payments service\n"+
			"(PAYMENTS_SIGNING_KEY_ID, PAYMENTS_SIGNING_KEY) and the public key for the consumers'\n"+
			"PAYMENTS_PUBLIC_KEYS. Nothing is stored; docs/SECURITY.md says how to roll a new key out.", out)
	id := fs.String("id", "", "the key's id, which its signatures name (default: its fingerprint, ed25519-<16 hex digits>)")
	if err := cli.Parse(fs, args); err != nil {
		return fmt.Errorf("signing-key create: %w", err)
	}
	s, err := provenance.GenerateSigner(*id)
	if err != nil {
		return fmt.Errorf("signing-key create: %w", err)
	}
	_, err = fmt.Fprintf(out, `# The payments service's, and no one else's: put both in its secret store.
PAYMENTS_SIGNING_KEY_ID=%s
PAYMENTS_SIGNING_KEY=%s
# The ledger's and the webhooks service's: add it to the keys they hold
# (comma-separated) and roll them out before payments signs with the key.
PAYMENTS_PUBLIC_KEYS=%s
`, s.KeyID(), s.Seed(), s.PublicKey())
	return err
}
