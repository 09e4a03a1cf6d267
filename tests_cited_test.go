package paymentsoutbox_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsCiteRealTests: every test a document names — the failure windows'
// table, the threat model, the runbook, the forking checklist — is defined by
// a test file of the repository, so a renamed or deleted guard cannot leave a
// reader trusting a test that no longer runs.
func TestDocsCiteRealTests(t *testing.T) {
	defined := map[string]bool{}
	testFunc := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	cited := regexp.MustCompile("`(Test[A-Z][A-Za-z0-9_]*)`")
	citations := map[string][]string{} // test → documents citing it
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		switch {
		case d.IsDir():
		case strings.HasSuffix(path, "_test.go"):
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
				defined[m[1]] = true
			}
		case strings.HasSuffix(path, ".md"):
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range cited.FindAllStringSubmatch(string(src), -1) {
				if docs := citations[m[1]]; len(docs) == 0 || docs[len(docs)-1] != path {
					citations[m[1]] = append(docs, path)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(defined) < 100 || len(citations) < 20 {
		t.Fatalf("found %d tests and %d cited: the test is not reading what it should", len(defined), len(citations))
	}
	for name, docs := range citations {
		if !defined[name] {
			t.Errorf("%s cite %s, which no test file defines: name the test that guards it now", strings.Join(docs, ", "), name)
		}
	}
}
