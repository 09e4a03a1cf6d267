// Package cli is how every binary reads a subcommand's arguments, so that
// every subcommand answers alike: -h or --help prints its usage to stdout and
// succeeds (each binary's run turns flag.ErrHelp into a nil error, hence exit
// status 0), and an unknown flag or a stray argument is an error naming it.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"
)

// NewFlagSet returns the flag set of one subcommand. synopsis is its usage
// line (e.g. "payments outbox requeue --id ID | --all") and doc says what it
// does; -h or --help prints both, then the flags, to out, and Parse returns
// flag.ErrHelp.
func NewFlagSet(synopsis, doc string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(synopsis, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: %s\n\n%s\n", synopsis, doc)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(out)
			fs.PrintDefaults()
		}
	}
	return fs
}

// Parse parses args into fs and refuses what is left over: no subcommand
// takes positional arguments, and one silently ignored hides a typo.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

// NoArgs reads the arguments of command cmd, which takes none but -h; an
// error is prefixed with cmd.
func NoArgs(cmd string, args []string, synopsis, doc string, out io.Writer) error {
	if err := Parse(NewFlagSet(synopsis, doc, out), args); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return nil
}

// Subcommand splits the arguments of command group (e.g. "outbox") into its
// subcommand and that subcommand's arguments. Without a subcommand, -h
// prints the group's synopsis and doc and returns flag.ErrHelp; anything
// else is an error saying which subcommands it wants. An error is prefixed
// with group.
func Subcommand(group string, args []string, synopsis, doc, want string, out io.Writer) (string, []string, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if err := NewFlagSet(synopsis, doc, out).Parse(args); err != nil {
			return "", nil, fmt.Errorf("%s: %w", group, err)
		}
		return "", nil, errors.New(group + ": want a subcommand: " + want)
	}
	return args[0], args[1:], nil
}

// UUIDs is a repeatable flag of UUIDs, kept in their canonical form; a value
// that is not one is refused when the flags are parsed.
type UUIDs []string

var _ flag.Value = (*UUIDs)(nil)

func (l *UUIDs) String() string { return strings.Join(*l, ",") }

// Set adds v, refusing what is not a UUID.
func (l *UUIDs) Set(v string) error {
	id, err := uuid.Parse(v)
	if err != nil {
		return fmt.Errorf("%q is not a UUID", v)
	}
	*l = append(*l, id.String())
	return nil
}
