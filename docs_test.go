package paymentsoutbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// docFiles are the repository's documents: the README and every Markdown
// file under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir("docs", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, filepath.ToSlash(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// markdownFiles are every Markdown file of the repository, the documents of
// docs/ and the READMEs beside deploy artefacts and scripts alike; hidden
// directories (.git, .github, .ci) are left out.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, filepath.ToSlash(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinksResolve fails on a relative link of any Markdown file that
// leads nowhere: a file or directory that does not exist, or an anchor
// (FILE.md#anchor, or #anchor within the file) that no heading of its file
// has. Chapters move and headings are renamed; their links must follow.
func TestDocLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(file string) (map[string]bool, error) {
		if a, ok := anchors[file]; ok {
			return a, nil
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		anchors[file] = headingAnchors(string(b))
		return anchors[file], nil
	}
	checked := 0
	for _, file := range markdownFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range proseLines(string(b)) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
					continue // http:, https:, mailto:
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %s: %s does not exist", file, i+1, target, dest)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s:%d: link %s: an anchor into a file that is not Markdown", file, i+1, target)
					continue
				}
				a, err := anchorsOf(dest)
				if err != nil {
					t.Errorf("%s:%d: link %s: %v", file, i+1, target, err)
					continue
				}
				if !a[anchor] {
					t.Errorf("%s:%d: link %s: %s has no heading with the anchor #%s", file, i+1, target, dest, anchor)
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d links; the test reads the wrong lines", checked)
	}
}

// TestDocsCiteNothingOutside keeps the documents to what a fork has: the
// repository itself. A fork has no issue tracker or specification of ours,
// so a document names the file that states a contract, never an issue
// number or a document outside the repository.
func TestDocsCiteNothingOutside(t *testing.T) {
	forbidden := []*regexp.Regexp{
		regexp.MustCompile(`\bSPEC(\.md)?\b`),
		regexp.MustCompile(`(?i)\b(issue|pr|pull request)\s*#?\d+`),
		regexp.MustCompile(`(^|[\s(\[])#\d+\b`),
	}
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, re := range forbidden {
				if m := re.FindString(line); m != "" {
					t.Errorf("%s:%d: %q cites something outside the repository: name the file in the repository that says it", file, i+1, strings.TrimSpace(m))
				}
			}
		}
	}
}

// proseLines returns the lines of a Markdown document with those inside
// fenced code blocks blanked, so that line numbers stay those of the file.
func proseLines(md string) []string {
	lines := strings.Split(md, "\n")
	inFence := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			lines[i] = ""
			continue
		}
		if inFence {
			lines[i] = ""
		}
	}
	return lines
}

// headingAnchors returns the anchors GitHub gives a Markdown file's headings:
// lower case, punctuation dropped, spaces as hyphens, repeats numbered.
func headingAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(md) {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// packageDirs returns every directory of the repository that holds a Go
// package, both modules' (the services' and tools/), slash-separated and
// relative to the root, which holds only the repository's own tests and is
// left out.
func packageDirs(t *testing.T) map[string]bool {
	t.Helper()
	dirs := map[string]bool{}
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != "." && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") && filepath.Dir(p) != "." {
			dirs[filepath.ToSlash(filepath.Dir(p))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

var (
	backticked  = regexp.MustCompile("`([^`]+)`")
	packageName = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
)

// tableRows returns the rows of the first Markdown table after heading in
// doc, each as its cells.
func tableRows(t *testing.T, doc, heading string) [][]string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("no heading %q", heading)
	}
	var rows [][]string
	inTable := false
	for _, line := range strings.Split(doc[i+len(heading)+2:], "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) >= 2 && !strings.HasPrefix(cells[0], "---") {
			rows = append(rows, cells)
		}
	}
	return rows
}

// TestPackageTablesListEveryPackage keeps the two maps of the code true: the
// README's code table names, in the rows of domain/, application/, adapters/
// and cmd/, every package below that directory by its name (test helpers,
// …test, aside) and nothing else; docs/FORKING.md's layout table names every
// package directory of both modules by its path, and only paths that exist.
// A package added, moved or renamed fails here until the tables say so.
func TestPackageTablesListEveryPackage(t *testing.T) {
	dirs := packageDirs(t)
	if len(dirs) < 40 || !dirs["application/inbox"] || !dirs["tools/walkthrough"] {
		t.Fatalf("found %d package directories; the test is not looking where it should", len(dirs))
	}

	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, row := range tableRows(t, string(readme), "## Code") {
		top := ""
		for _, d := range []string{"domain", "application", "adapters", "cmd"} {
			if strings.HasPrefix(row[0], "[`"+d+"/`]") {
				top = d
			}
		}
		if top == "" {
			continue
		}
		seen[top] = true
		named := map[string]bool{}
		for _, m := range backticked.FindAllStringSubmatch(row[1], -1) {
			if packageName.MatchString(m[1]) {
				named[m[1]] = true
			}
		}
		want := map[string]string{}
		for d := range dirs {
			if name := filepath.Base(d); strings.HasPrefix(d, top+"/") && !strings.HasSuffix(name, "test") {
				want[name] = d
			}
		}
		for name, d := range want {
			if !named[name] {
				t.Errorf("README.md's code table: the %s/ row does not name `%s` (%s)", top, name, d)
			}
		}
		for name := range named {
			if want[name] == "" {
				t.Errorf("README.md's code table: the %s/ row names `%s`, which is no package under %s/", top, name, top)
			}
		}
	}
	if len(seen) != 4 {
		t.Errorf("README.md's code table has rows for %v; want domain/, application/, adapters/ and cmd/", seen)
	}

	forking, err := os.ReadFile("docs/FORKING.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, row := range tableRows(t, string(forking), "## Layout") {
		for _, m := range backticked.FindAllStringSubmatch(row[0], -1) {
			p := strings.TrimSuffix(m[1], "/")
			listed[p] = true
			if _, err := os.Stat(p); err != nil {
				t.Errorf("docs/FORKING.md's layout table lists `%s`, which does not exist", m[1])
			}
		}
	}
	for d := range dirs {
		if !listed[d] {
			t.Errorf("docs/FORKING.md's layout table does not list `%s`: add it to a row's path column, with what it holds", d)
		}
	}
}
