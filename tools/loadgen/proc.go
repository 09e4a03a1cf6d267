package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/payments-outbox/payments-outbox/tools/internal/proc"
)

// startService runs bin with the current environment plus env (later
// entries win), its output in dir/<name>.log, and waits until it is ready.
func startService(ctx context.Context, dir, bin string, env []string) (*proc.Process, error) {
	name := filepath.Base(bin)
	p, err := proc.New(name, bin, filepath.Join(dir, name+".log"), append(os.Environ(), env...))
	if err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}
