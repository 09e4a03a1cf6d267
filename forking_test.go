package paymentsoutbox_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// checklistHeading starts the checklist of the places a new state change
// touches, each bullet naming the tests that guard it.
const checklistHeading = "## Adding a state change"

// TestStateChangeChecklistCitesRealTests: every test the checklist names
// exists, so a renamed or deleted guard cannot leave a forker trusting a test
// that no longer runs. The checklist is looked for in README.md and in
// docs/, wherever it lives.
func TestStateChangeChecklistCitesRealTests(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var checklist, where string
	for _, path := range append([]string{"README.md"}, docs...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		_, after, ok := strings.Cut(text, "\n"+checklistHeading+"\n")
		if !ok {
			continue
		}
		if where != "" {
			t.Fatalf("both %s and %s hold %q: keep one checklist", where, path, checklistHeading)
		}
		if i := strings.Index(after, "\n#"); i >= 0 {
			after = after[:i] // up to the next heading
		}
		checklist, where = after, path
	}
	if where == "" {
		t.Fatalf("no %q section in README.md or docs/*.md", checklistHeading)
	}
	cited := regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(checklist, -1)
	if len(cited) < 5 {
		t.Fatalf("%s's checklist cites %d tests; the test is not reading what it should", where, len(cited))
	}

	defined := map[string]bool{}
	testFunc := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range cited {
		if !defined[m[1]] {
			t.Errorf("%s's %q cites %s, which no test file defines: name the test that guards the step now", where, checklistHeading, m[1])
		}
	}
}

// recipeHeadings start the sections of docs/FORKING.md that say, file by
// file, what a new event or a new state change touches.
var recipeHeadings = []string{"## Add an event type", "## Adding a state change"}

// TestRecipeNamesFilesThatExist: every repository path the recipe of
// docs/FORKING.md names in backticks (one with a directory in it, and no
// placeholder such as <type>) exists, so a file moved or folded into
// another cannot leave a forker looking for it. Markdown links are
// TestDocLinksResolve's.
func TestRecipeNamesFilesThatExist(t *testing.T) {
	b, err := os.ReadFile("docs/FORKING.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	quoted := regexp.MustCompile("`([^`\\s]+)`")
	checked := 0
	for _, heading := range recipeHeadings {
		_, section, ok := strings.Cut(text, "\n"+heading+"\n")
		if !ok {
			t.Errorf("docs/FORKING.md has no section %q", heading)
			continue
		}
		if i := strings.Index(section, "\n## "); i >= 0 {
			section = section[:i]
		}
		for _, m := range quoted.FindAllStringSubmatch(section, -1) {
			path := strings.TrimSuffix(m[1], "/")
			top, _, nested := strings.Cut(path, "/")
			if !nested || strings.ContainsAny(path, "<>{}*") {
				continue
			}
			if _, err := os.Stat(top); err != nil {
				continue // not a path of the repository: a route, say
			}
			checked++
			if _, err := os.Stat(path); err != nil {
				t.Errorf("docs/FORKING.md's %q names `%s`, which does not exist: name the file that holds that step now", heading, m[1])
			}
		}
	}
	if checked < 30 {
		t.Fatalf("checked %d paths of the recipe; the test is not reading what it should", checked)
	}
}
