package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The receiver of docker-compose.yml runs as uid 65532 and reads the secret
// through a bind mount: to it the file is "others'". A file only its owner
// may read got every delivery refused on Linux; a directory others cannot
// search hides the file as well. An earlier run's 0600 file and a 0700
// directory (a umask of 077) are opened up too, to exactly that.
func TestReceiverSecretIsReadableByTheReceiversUID(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), ".webhook-receiver")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o700); err != nil { // whatever the umask
		t.Fatal(err)
	}
	file := filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte("whsec_old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeReceiverSecret(file, "whsec_new"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "whsec_new\n" {
		t.Errorf("the file holds %q (%v), want the new secret alone", b, err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o644 {
		t.Errorf("the secret's mode is %v, want -rw-r--r--: others read it, nobody else writes it", got)
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := di.Mode().Perm(); got != 0o701 {
		t.Errorf("the directory's mode is %v, want drwx-----x: others may reach the file, not list the directory", got)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("the directory holds %v (%v), want the secret alone: no temporary file left", entries, err)
	}
}
