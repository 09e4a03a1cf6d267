package paymentsoutbox_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProductionCodeCitesNoMeasurements: a comment in production code gives
// the reason, not a figure, and never points at docs/BENCHMARKS.md — the
// figures age the day the code changes, and a fork's numbers are its own.
// Measurements live in docs/BENCHMARKS.md and in commit messages; tests and
// the tools module, which produce them, may cite it.
func TestProductionCodeCitesNoMeasurements(t *testing.T) {
	var offenders []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == "tools" || strings.HasPrefix(d.Name(), ".") && path != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(src), "BENCHMARKS") {
			offenders = append(offenders, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range offenders {
		t.Errorf("%s mentions BENCHMARKS: give the reason in the comment and move the figure to docs/BENCHMARKS.md", p)
	}
}
