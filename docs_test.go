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

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinksResolve fails on a relative link of a document that leads
// nowhere: a file or directory that does not exist, or an anchor that no
// heading of its file has. Chapters move; their links must move with them.
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
	for _, file := range docFiles(t) {
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
